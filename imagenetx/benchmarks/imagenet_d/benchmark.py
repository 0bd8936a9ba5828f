"""ImageNet-D's analysis spec: slicings by nuisance kind (and, where the data
carries it, the specific nuisance value, and the class), and two label
spaces: ``class``, a 1000-way model is right when its top-1 index is any
ImageNet-1k index of the image's class (``ground_truth.imagenet_indices``), as
the authors' ``evaluate_imagenet_models.py`` scores it; and ``top5``, right
when any of its 5 best indices is, each image counted once (the authors'
script can count an image twice when two of its top 5 are indices of its
class).
"""

from imagenetx.benchmarks.base import Benchmark, field_slicing
from imagenetx.benchmarks.loading import IMAGENET_D, load_hint
from imagenetx.classes.imagenet_d import NUISANCES
from imagenetx.classes.spaces import InSet, TopKInSet
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.slicing import Slicing


class ImageNetD(Benchmark):
    """ImageNet-D's analysis spec (see the module docstring)."""

    name = "imagenet_d"
    title = "ImageNet-D"
    loading = IMAGENET_D
    default_slicing = "nuisance"
    default_label_space = "class"
    group_slicing = "nuisance"
    discovery_slicings = ("nuisance", "class")
    #: zero-shot heads over the 113 classes, as ImageNet-D's evaluate_vlm.py
    output_classes = "imagenet_d"

    def matches(self, samples, settings=None) -> bool:
        gt = settings.gt_field if settings else "ground_truth"
        return samples.has_field("nuisance") and samples.has_field(
            f"{gt}.imagenet_indices")

    def check_fields(self, samples, settings):
        for path in ("nuisance", f"{settings.gt_field}.imagenet_indices"):
            if not samples.has_field(path):
                raise ImageNetXError(
                    f"Dataset '{samples._dataset.name}' has no field '{path}' "
                    f"of the ImageNet-D contract: {load_hint('imagenet_d')}, or pass "
                    "`gt_field`")

    def slicing_names(self, samples, settings):
        return ["nuisance", "nuisance_value", "class"]

    def slicing(self, samples, settings, name):
        if name == "nuisance":
            return Slicing("nuisance", "nuisance", NUISANCES, title="nuisance")
        if name == "nuisance_value":
            return field_slicing(samples, "nuisance_value")
        if name == "class":
            labels = field_slicing(samples, f"{settings.gt_field}.label")
            return Slicing("class", labels.path, labels.values, title="class")
        return None

    def label_spaces(self, settings):
        indices = f"{settings.gt_field}.imagenet_indices"
        return {"class": InSet(indices, "class", empty="count"),
                "top5": TopKInSet(indices, "top5")}

    def base_query(self, settings):
        return {"nuisance": {"$ne": None}}
