"""The OOD benchmarks' analysis spec: one class, one instance per layout.

Slicings: ``class`` (the ground truth's classes: the 200 of ImageNet-A/R,
ObjectNet's 113, else the 1000), ImageNetV2's ``variant``, ImageNet-C's
``corruption`` and ``severity`` (ImageNet-C-bar's and -3DCC's too). Label
spaces: ``class`` (the 1000-way top-1 is the true class; on ObjectNet, any
ImageNet class of the true ObjectNet class) and, for ImageNet-A/R and
ObjectNet, ``subset`` (the default): the argmax over the benchmark's
classes of the stored logits (A/R's 200; the 125 ImageNet classes of
ObjectNet's 113), as the authors, timm's ``validate.py`` and the ImageNet
testbed score them, so ``imagenetx predict`` stores the logits on these
datasets.
"""

from imagenetx.benchmarks.base import Benchmark, field_slicing
from imagenetx.benchmarks.loading import load_hint, ood_loading
from imagenetx.benchmarks.ood.layouts import LAYOUTS, SEVERITIES, Layout
from imagenetx.classes.imagenet import class_table
from imagenetx.classes.ood import objectnet_classes
from imagenetx.classes.spaces import ClassSubset, ExactClass, InSet
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.slicing import Slicing

#: per slicing field, the default slicing and group slicing it implies
_DEFAULTS = {(): ("class", None), ("variant",): ("variant", "variant"),
             ("corruption", "severity"): ("corruption", "severity")}


class OODBenchmark(Benchmark):
    """An ImageNet OOD benchmark read from its release layout."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.name = layout.benchmark
        self.title = layout.title
        self.loading = ood_loading(layout)
        self.default_slicing, self.group_slicing = _DEFAULTS[layout.fields]
        self.default_label_space = "subset" if layout.subset else "class"
        self.discovery_slicings = (*layout.fields, "class")
        self.needs_logits = layout.subset is not None
        self.keeps_geometry = layout.keeps_geometry
        self.border_crop = layout.border_crop

    def matches(self, samples, settings=None) -> bool:
        # only the benchmark name in dataset.info says these: A/R/Sketch have
        # no fields of their own, and a user's own `variant` or `corruption`
        # field must not turn a dataset into ImageNetV2 or ImageNet-C
        return False

    def check_fields(self, samples, settings):
        for path in (f"{settings.gt_field}.class_index", *self.layout.fields):
            if not samples.has_field(path):
                raise ImageNetXError(
                    f"Dataset '{samples._dataset.name}' has no field '{path}' of the "
                    f"{self.title} contract: {load_hint(self.name)}, or pass `gt_field`")

    def slicing_names(self, samples, settings):
        return [*self.layout.fields, "class"]

    def slicing(self, samples, settings, name):
        if name == "class":
            labels = class_table().labels
            return Slicing("class", f"{settings.gt_field}.label",
                           tuple(labels[i] for i in self.layout.classes), title="class")
        if name == "corruption" and name in self.layout.fields:
            present = set(samples.distinct("corruption"))
            return Slicing(name, name, tuple(c for c in self.layout.corruptions if c in present),
                           title="corruption")
        if name == "severity" and name in self.layout.fields:
            return Slicing(name, name, SEVERITIES, title="severity")
        if name == "variant" and name in self.layout.fields:
            return field_slicing(samples, "variant")
        return None

    def label_spaces(self, settings):
        gt = f"{settings.gt_field}.class_index"
        spaces = {"class": ExactClass(gt)}
        if self.layout.subset:
            spaces = {"subset": ClassSubset(ExactClass(gt), self.layout.classes, "subset"),
                      **spaces}
        return spaces

    def base_query(self, settings):
        query = {f"{settings.gt_field}.class_index": {"$ne": None}}
        for name in self.layout.fields:
            query[name] = {"$ne": None}
        return query


class ObjectNetBenchmark(OODBenchmark):
    """ObjectNet's 113 classes that overlap ImageNet: the ground truth is
    the ObjectNet class (``class_index`` 0-112) with its ImageNet classes
    (``imagenet_indices``); a prediction is right when it is any of them.
    """

    def check_fields(self, samples, settings):
        path = f"{settings.gt_field}.imagenet_indices"
        if not samples.has_field(path):
            raise ImageNetXError(
                f"Dataset '{samples._dataset.name}' has no field '{path}' of the "
                f"{self.title} contract: {load_hint(self.name)}, or pass `gt_field`")

    def slicing(self, samples, settings, name):
        if name == "class":
            return Slicing("class", f"{settings.gt_field}.label",
                           tuple(c.label for c in objectnet_classes()), title="class")
        return None

    def label_spaces(self, settings):
        indices = f"{settings.gt_field}.imagenet_indices"
        # the testbed's objectnet_accuracy: argmax over the 125, right if any of the class's
        return {"subset": ClassSubset(InSet(indices, "class"), self.layout.classes, "subset"),
                "class": InSet(indices, "class")}

    def base_query(self, settings):
        return {f"{settings.gt_field}.imagenet_indices": {"$ne": None}}


#: one benchmark per release layout (the registry names each)
(IMAGENET_A, IMAGENET_R, IMAGENET_SKETCH, IMAGENET_V2, IMAGENET_C, IMAGENET_CBAR,
 IMAGENET_3DCC) = (OODBenchmark(LAYOUTS[kind])
                   for kind in ("a", "r", "sketch", "v2", "c", "cbar", "3dcc"))
OBJECTNET = ObjectNetBenchmark(LAYOUTS["objectnet"])
#: the benchmark of each layout, by its kind
BY_KIND = {b.layout.kind: b for b in (IMAGENET_A, IMAGENET_R, IMAGENET_SKETCH, IMAGENET_V2,
                                      IMAGENET_C, IMAGENET_CBAR, IMAGENET_3DCC, OBJECTNET)}
