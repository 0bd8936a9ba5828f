"""The OOD-detection benchmarks' analysis spec: one class, one instance per
benchmark (ImageNet-O, NINCO, OpenOOD v1.5's ImageNet-1K).

Slicings: ``ood_role`` (ID, near, far, OOD), ``ood_source`` (ImageNet val
and each OOD set), ``ood_class`` (the OOD classes), and, on the ID images,
ImageNet-X's ``top_factor``, ``factors`` and ``metaclass`` (which kinds of
ID images a detector takes for OOD) and the ``class``. The label space is
the exact class; OOD images have no ground truth, so only the ID images
count towards accuracy. ``imagenetx predict`` stores the logits on these
datasets: the detectors score them.
"""

from imagenetx.benchmarks.base import Benchmark
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.benchmarks.loading import IMAGENET_O, NINCO, OPENOOD_IMAGENET, Loading, load_hint
from imagenetx.benchmarks.ood_detection.contract import (
    CLASS_FIELD,
    ROLE_FIELD,
    ROLES,
    SOURCE_FIELD,
    SOURCES,
)
from imagenetx.classes.imagenet import METACLASSES, class_table
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.slicing import Slicing


class OODDetectionBenchmark(Benchmark):
    """An OOD-detection benchmark: ImageNet val images (ID) beside OOD sets,
    each sample tagged with its role and source."""

    default_slicing = "ood_source"
    group_slicing = "ood_role"
    discovery_slicings = ("factors", "metaclass", "class")
    needs_logits = True

    def __init__(self, loading: Loading):
        self.loading = loading
        self.name = loading.benchmark
        self.title = loading.title

    def matches(self, samples, settings=None) -> bool:
        # only the benchmark name in dataset.info says these: a user's own
        # `ood_role` field must not turn a dataset into one of them
        return False

    def check_fields(self, samples, settings):
        for path in (ROLE_FIELD, SOURCE_FIELD):
            if not samples.has_field(path):
                raise ImageNetXError(
                    f"Dataset '{samples._dataset.name}' has no field '{path}' of the "
                    f"{self.title} contract: {load_hint(self.name)}")

    def slicing_names(self, samples, settings):
        names = ["ood_role", "ood_source", "ood_class"]
        if samples.has_field(f"{settings.field_name}.top_factor"):
            names += ["top_factor", "factors", "metaclass"]
        return names + ["class"]

    def slicing(self, samples, settings, name):
        fn = settings.field_name
        if name == "ood_role":
            return Slicing(name, ROLE_FIELD, _present(samples, ROLE_FIELD, ROLES), title="role")
        if name == "ood_source":
            return Slicing(name, SOURCE_FIELD, _present(samples, SOURCE_FIELD, SOURCES),
                           title="source")
        if name == "ood_class":
            values = sorted(v for v in samples.distinct(CLASS_FIELD) if v is not None)
            return Slicing(name, CLASS_FIELD, tuple(values), title="OOD class")
        if name in ("top_factor", "factors", "metaclass") and not samples.has_field(fn):
            return None
        return {
            "top_factor": Slicing("top_factor", f"{fn}.top_factor", FACTORS, title="factor"),
            "factors": Slicing("factors", f"{fn}.factors", FACTORS, multi=True,
                               title="factor"),
            "metaclass": Slicing("metaclass", f"{fn}.metaclass", METACLASSES,
                                 title="meta-class"),
            "class": Slicing("class", f"{settings.gt_field}.label", class_table().labels,
                             title="class"),
        }.get(name)


def _present(samples, path: str, order) -> tuple:
    """The values of ``order`` the samples hold, in that order."""
    present = set(samples.distinct(path))
    return tuple(v for v in order if v in present)


#: one benchmark per OOD-detection loading (the registry names each)
IMAGENET_O_BENCHMARK, NINCO_BENCHMARK, OPENOOD_IMAGENET_BENCHMARK = (
    OODDetectionBenchmark(lo) for lo in (IMAGENET_O, NINCO, OPENOOD_IMAGENET))
