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
-   ``dataset.info["imagenetx"]["benchmark"]``: ``imagenet_a``,
    ``imagenet_r``, ``imagenet_sketch``, ``imagenet_v2``, ``imagenet_c`` or
    ``imagenet_cbar``
"""

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import fiftyone as fo

from imagenetx.benchmarks.ood.layouts import find_images, get_layout
from imagenetx.classes.imagenet import class_table
from imagenetx.memory import gc_paused
from imagenetx.benchmarks.ood.benchmark import OODBenchmark
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
        kind: ``a``, ``r``, ``sketch``, ``v2``, ``c`` or ``cbar`` (or the benchmark
            name, ``imagenet_a`` ...)
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
    labels = class_table().labels
    with new_dataset(name, overwrite) as dataset:
        declare_classification(dataset, gt_field)
        for field_name in layout.fields:
            if not dataset.has_field(field_name):
                dataset.add_sample_field(field_name, _FIELD_TYPES[field_name])
        fields = {}  # slicing values -> their fields, shared by the rows
        insert_samples(dataset, (
            {"filepath": i.path,
             gt_field: raw_classification(labels[i.class_index], i.class_index),
             **(fields.get(i.values)
                or fields.setdefault(i.values, dict(zip(layout.fields, i.values))))}
            for i in images))
        mark_benchmark(dataset, layout.benchmark)
        OODBenchmark(layout).tagged(dataset, FieldNames(gt_field=gt_field))
    slices = {f: dict(sorted(Counter(i.values[k] for i in images).items()))
              for k, f in enumerate(layout.fields)}
    return dataset, OODSummary(
        dataset.name, layout.title, folder, len(images),
        len({i.class_index for i in images}), len(layout.classes), slices)

