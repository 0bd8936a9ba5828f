"""Which images a number counts.

A whole-set number (ImageNet top-1, an attack's clean and robust accuracy,
relative mCE's clean error) counts every evaluated sample with a ground
truth, as the papers do: all 50,000 ImageNet val images, all 5,000 of
RobustBench's. Per-factor numbers count the images ImageNet-X annotates
(48,868 of the val images, its prototypes aside unless asked).
:func:`population` says how many of how many, so that a readout can say
so where the two differ ("4,645 of 5,000 images carry ImageNet-X factors").
"""

from dataclasses import dataclass
from typing import Dict, Optional, Sequence

from imagenetx.analysis.columns import derived, read_columns
from imagenetx.analysis.settings import Settings
from imagenetx.benchmarks import get_benchmark
from imagenetx.classes.spaces import int_column
from imagenetx.store.datasets import get_dataset

#: ImageNet's validation images by file name (``ILSVRC2012_val_00000001.JPEG``,
#: an edited copy's other extension too), as a query the database runs
VAL_IMAGES = {"filepath": {"$regex": r"ILSVRC2012_val_[0-9]{8}\.[^/]*$"}}


@dataclass(frozen=True)
class TopOne:
    """Top-1 by class index over a population.

    Attributes:
        correct: the samples whose prediction is the ground truth's class
        n: the samples with both
    """

    correct: int
    n: int

    @property
    def accuracy(self) -> Optional[float]:
        return self.correct / self.n if self.n else None


def val_images(samples):
    """The ImageNet validation images of ``samples`` (a dataset, view or
    name), ImageNet-X-annotated or not."""
    return get_dataset(samples).match(VAL_IMAGES)


def whole_set_top1(samples, fields: Sequence[str], gt_field: str = "ground_truth",
                   attribute: str = "class_index") -> Dict[str, TopOne]:
    """Top-1 of each field over every sample of ``samples`` that has a
    ground truth and a prediction of the field, in one query.

    Args:
        samples: a dataset, view, or dataset name
        fields: prediction fields
        gt_field ("ground_truth"): the ground truth
        attribute ("class_index"): the prediction's attribute compared
            with the ground truth's class (an attack's ``clean_class_index``
            gives its clean accuracy)
    """
    gt_path = f"{gt_field}.class_index"
    paths = {f: f"{f}.{attribute}" for f in fields}
    columns = read_columns(get_dataset(samples), [gt_path, *paths.values()])
    truth = derived("int_column", [columns[gt_path]], lambda: int_column(columns[gt_path]))
    out = {}
    for f, path in paths.items():
        predicted = derived("int_column", [columns[path]], lambda: int_column(columns[path]))
        both = (truth >= 0) & (predicted >= 0)
        out[f] = TopOne(int((both & (predicted == truth)).sum()), int(both.sum()))
    return out


@dataclass(frozen=True)
class Population:
    """The images per-factor numbers count, of those whole-set numbers count.

    Attributes:
        counted: images with ImageNet-X factors (the per-factor numbers')
        evaluated: every sample with a ground truth and the prediction
        prototypes_aside: whether ImageNet-X's prototypes are left out of
            ``counted``
    """

    counted: int
    evaluated: int
    prototypes_aside: bool = True

    def note(self) -> str:
        """``4,645 of 5,000 images carry ImageNet-X factors (...)``, or ""
        where every evaluated image counts."""
        if self.counted == self.evaluated:
            return ""
        aside = ", prototypes aside" if self.prototypes_aside else ""
        return (f"{self.counted:,} of {self.evaluated:,} images carry ImageNet-X factors"
                f"{aside}: per-factor numbers count those, whole-set numbers (top-1, "
                f"clean and robust accuracy) all {self.evaluated:,}")

    def to_dict(self) -> dict:
        return {"counted": self.counted, "evaluated": self.evaluated, "note": self.note()}


def population(samples, field: str, settings: Settings = None,
               **kwargs) -> Optional[Population]:
    """How many of the images with a ground truth and ``field`` the
    per-factor numbers count, on an ImageNet-X dataset (None on another
    benchmark's, where both count the same images).

    Args:
        samples: a dataset, view, or dataset name
        field: a prediction field
        settings (None): as in :func:`imagenetx.analysis.compute_ratios`
            (``gt_field``, ``field_name``, ``include_prototypes``)
    """
    return populations(samples, [field], settings, **kwargs)[field]


def populations(samples, fields: Sequence[str], settings: Settings = None,
                **kwargs) -> Dict[str, Optional[Population]]:
    """:func:`population` of each of ``fields``, read in one query per view."""
    s = Settings.create(settings, **kwargs)
    samples = get_dataset(samples)
    benchmark = get_benchmark(samples, s.benchmark, s)
    out: Dict[str, Optional[Population]] = {f: None for f in fields}
    present = [f for f in fields if samples.has_field(f)]
    if benchmark.name != "imagenet_x" or not present:
        return out
    # the columns the panel's ratios just read (read_columns' cache): no query
    # when nothing changed
    counted = whole_set_top1(benchmark.base_view(samples, s), present, s.gt_field)
    evaluated = whole_set_top1(samples, present, s.gt_field)
    for f in present:
        out[f] = Population(counted[f].n, evaluated[f].n, not s.include_prototypes)
    return out
