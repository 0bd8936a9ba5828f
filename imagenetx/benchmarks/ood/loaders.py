"""Load an ImageNet OOD benchmark's release folder onto FiftyOne.

Sample contract (every benchmark of :data:`~imagenetx.benchmarks.ood.
layouts.LAYOUTS`):

-   ``ground_truth``: ``fo.Classification`` with ``label`` (the ImageNet-1k
    class's unique label) and ``class_index`` (0-999), from the class folder
-   ImageNetV2: ``variant`` (str): ``matched-frequency``, ``threshold-0.7``
    or ``top-images``
-   ImageNet-C and -C-bar: ``corruption`` (str, ``gaussian_noise`` ...,
    ``blue_noise_sample`` ...) and ``severity`` (int, 1-5; C-bar's
    parameter-named folders mapped by :data:`~imagenetx.benchmarks.ood.
    layouts.CBAR_PARAMS`)
-   ImageNet-3DCC: ``corruption`` (``near_focus`` ..., RobustBench's 12)
    and ``severity`` (int, 1-5), as ImageNet-C
-   ObjectNet (only the images of its 113 classes that overlap ImageNet):
    ``ground_truth`` with ``label`` (the ObjectNet label, ``Alarm clock``),
    ``class_index`` (the ObjectNet id, 0-112), ``imagenet_indices`` (list
    of int: its ImageNet-1k classes, ``[409, 530]``) and ``class_dir`` (the
    release folder, ``alarm_clock``), as ImageNet-D's; in
    ``dataset.info["imagenetx"]``: ``border_crop`` (2: the pixels every
    model run cuts from each side first) and ``no_tuning`` (why nothing may
    be fitted on it: :func:`~imagenetx.benchmarks.ood.tuning.refuses_tuning`)
-   ``dataset.info["imagenetx"]["benchmark"]``: ``imagenet_a``,
    ``imagenet_r``, ``imagenet_sketch``, ``imagenet_v2``, ``imagenet_c``,
    ``imagenet_cbar``, ``imagenet_3dcc`` or ``objectnet``
"""

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import fiftyone as fo

from imagenetx.benchmarks.ood.layouts import Layout, find_images, get_layout
from imagenetx.classes.imagenet import class_table
from imagenetx.classes.ood import objectnet_classes
from imagenetx.memory import gc_paused
from imagenetx.benchmarks.ood.benchmark import BY_KIND
from imagenetx.benchmarks.scenarios import FieldNames
from imagenetx.store.datasets import check_new_dataset_name, mark_benchmark
from imagenetx.store.ingest import insert_samples, new_dataset
from imagenetx.store.schema import declare_classification, raw_classification

_FIELD_TYPES = {"variant": fo.StringField, "corruption": fo.StringField,
                "severity": fo.IntField}


@dataclass
class OODSummary:
    """What a load found and wrote.

    Attributes:
        dataset: the dataset's name
        title: the benchmark's display name
        source: the release folder read
        samples: images loaded
        classes: distinct classes among them
        of_classes: the benchmark's number of classes
        slices: per slicing field, images per value
    """

    dataset: str
    title: str
    source: str
    samples: int
    classes: int
    of_classes: int
    slices: Dict[str, Dict] = field(default_factory=dict)

    def __str__(self):
        text = (f"{self.title} dataset '{self.dataset}' from {self.source}: "
                f"{self.samples:,} images of {self.classes} of {self.of_classes} classes")
        for name, counts in self.slices.items():
            text += f"; {name}: " + ", ".join(f"{v} ({n:,})" for v, n in counts.items())
        return text


@gc_paused()
def load_ood_dir(
    kind: str,
    folder: str,
    name: Optional[str] = None,
    overwrite: bool = False,
    gt_field: str = "ground_truth",
    variant: Optional[str] = None,
) -> Tuple[fo.Dataset, OODSummary]:
    """Builds a dataset from an OOD benchmark's release folder.

    Args:
        kind: ``a``, ``r``, ``sketch``, ``v2``, ``c``, ``cbar``, ``3dcc`` or
            ``objectnet`` (or the benchmark name, ``imagenet_a`` ...)
        folder: the release folder, laid out as the benchmark's
            :class:`~imagenetx.benchmarks.ood.layouts.Layout` says
        name (None): the dataset name (default: ``imagenet-a`` ...)
        overwrite (False): whether to replace an existing dataset
        gt_field ("ground_truth"): the ground truth field to write
        variant (None): ImageNetV2: the variant, when the folder name does
            not say it (or the one to read of several)

    Returns:
        ``(dataset, OODSummary)``

    Raises:
        ImageNetXError: before anything is written, for a bad folder (see
            :func:`~imagenetx.benchmarks.ood.layouts.find_images`) or an
            existing name without ``overwrite``
    """
    layout = get_layout(kind)
    images = find_images(layout, folder, variant)
    name = name or layout.default_name
    check_new_dataset_name(name, overwrite)
    truth = _ground_truth(layout)
    with new_dataset(name, overwrite) as dataset:
        if layout.kind == "objectnet":
            declare_classification(dataset, gt_field, imagenet_indices=(fo.ListField, fo.IntField),
                                   class_dir=fo.StringField)
        else:
            declare_classification(dataset, gt_field)
        for field_name in layout.fields:
            if not dataset.has_field(field_name):
                dataset.add_sample_field(field_name, _FIELD_TYPES[field_name])
        fields = {}  # slicing values -> their fields, shared by the rows
        insert_samples(dataset, (
            {"filepath": i.path, gt_field: truth(i.class_index),
             **(fields.get(i.values)
                or fields.setdefault(i.values, dict(zip(layout.fields, i.values))))}
            for i in images))
        mark_benchmark(dataset, layout.benchmark)
        _mark_handling(dataset, layout)
        BY_KIND[layout.kind].tagged(dataset, FieldNames(gt_field=gt_field))
    slices = {f: dict(sorted(Counter(i.values[k] for i in images).items()))
              for k, f in enumerate(layout.fields)}
    of_classes = len(objectnet_classes()) if layout.kind == "objectnet" else len(layout.classes)
    return dataset, OODSummary(
        dataset.name, layout.title, folder, len(images),
        len({i.class_index for i in images}), of_classes, slices)


def _ground_truth(layout: Layout):
    """class index -> the stored ground truth of the layout's benchmark."""
    if layout.kind == "objectnet":
        classes = objectnet_classes()
        return lambda k: raw_classification(
            classes[k].label, k, imagenet_indices=list(classes[k].imagenet_indices),
            class_dir=classes[k].folder)
    labels = class_table().labels
    return lambda k: raw_classification(labels[k], k)


def _mark_handling(dataset: fo.Dataset, layout: Layout) -> None:
    """Records in ``dataset.info`` what the layout asks of every use of its
    images: the border every model run cuts, the licence that forbids
    tuning on them."""
    if not (layout.border_crop or layout.no_tuning):
        return
    info = dict(dataset.info.get("imagenetx") or {})
    if layout.border_crop:
        info["border_crop"] = layout.border_crop
    if layout.no_tuning:
        info["no_tuning"] = layout.no_tuning
    dataset.info["imagenetx"] = info
    dataset.save()

