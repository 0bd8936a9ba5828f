"""Robustness benchmarks: each module or folder says how to load its data
and which slicings and label spaces it offers (a
:class:`~imagenetx.benchmarks.base.Benchmark`). The analysis engine, panel,
command line and report work on any of them.

-   :mod:`~imagenetx.benchmarks.imagenet_x`: ImageNet-X factors
-   :mod:`~imagenetx.benchmarks.imagenet_d`: ImageNet-D nuisances
-   :mod:`~imagenetx.benchmarks.cue_conflict`: texture-shape cue conflict
-   :mod:`~imagenetx.benchmarks.imagenet_e`: attribute edits, grouped
-   :mod:`~imagenetx.benchmarks.ood`: ImageNet-A, -R, -Sketch, V2, -C,
    -C-bar, -3DCC and ObjectNet from their release folders
-   :mod:`~imagenetx.benchmarks.ood_detection`: OOD detection: ImageNet-O,
    NINCO and OpenOOD v1.5's ImageNet-1K, ImageNet val as in-distribution
-   :mod:`~imagenetx.benchmarks.base`: the generic benchmark, any dataset
    sliced by any categorical field

:func:`register_benchmark` adds another (docs/extending.md). A benchmark
here says what it *is* and how its data is *loaded*; how it is *shown*
(its charts in the App's panel) is registered in
:mod:`imagenetx.present.charts`.
"""

import functools
from typing import List, Optional

from imagenetx.benchmarks.loading import LOADINGS
from imagenetx.errors import ImageNetXError
from imagenetx.registry import Registry


def _instance(benchmark):
    """A registered benchmark class is built once, with no arguments."""
    return benchmark() if isinstance(benchmark, type) else benchmark


def _check_name(name: str) -> None:
    if not name or name == "generic":
        raise ImageNetXError(
            f"Cannot register benchmark {name!r}: give its class a `name` other than "
            "'generic'")


#: the benchmarks by name, most specific first: a dataset is matched against
#: them in this order (the generic one, any dataset, last of all)
BENCHMARKS: Registry = Registry("benchmark", build=_instance, check_name=_check_name)
BENCHMARKS.register("imagenet_e", "imagenetx.benchmarks.imagenet_e.benchmark:ImageNetE")
BENCHMARKS.register("imagenet_x", "imagenetx.benchmarks.imagenet_x.benchmark:ImageNetX")
BENCHMARKS.register("imagenet_d", "imagenetx.benchmarks.imagenet_d.benchmark:ImageNetD")
BENCHMARKS.register("cue_conflict", "imagenetx.benchmarks.cue_conflict.benchmark:CueConflict")
BENCHMARKS.register("imagenet_a", "imagenetx.benchmarks.ood.benchmark:IMAGENET_A")
BENCHMARKS.register("imagenet_r", "imagenetx.benchmarks.ood.benchmark:IMAGENET_R")
BENCHMARKS.register("imagenet_sketch", "imagenetx.benchmarks.ood.benchmark:IMAGENET_SKETCH")
BENCHMARKS.register("imagenet_v2", "imagenetx.benchmarks.ood.benchmark:IMAGENET_V2")
BENCHMARKS.register("imagenet_c", "imagenetx.benchmarks.ood.benchmark:IMAGENET_C")
BENCHMARKS.register("imagenet_cbar", "imagenetx.benchmarks.ood.benchmark:IMAGENET_CBAR")
BENCHMARKS.register("imagenet_3dcc", "imagenetx.benchmarks.ood.benchmark:IMAGENET_3DCC")
BENCHMARKS.register("objectnet", "imagenetx.benchmarks.ood.benchmark:OBJECTNET")
BENCHMARKS.register("imagenet_o",
                    "imagenetx.benchmarks.ood_detection.benchmark:IMAGENET_O_BENCHMARK")
BENCHMARKS.register("ninco", "imagenetx.benchmarks.ood_detection.benchmark:NINCO_BENCHMARK")
BENCHMARKS.register("openood_imagenet",
                    "imagenetx.benchmarks.ood_detection.benchmark:OPENOOD_IMAGENET_BENCHMARK")

def register_benchmark(benchmark):
    """Adds a benchmark: a :class:`~imagenetx.benchmarks.base.Benchmark`
    subclass (built once, with no arguments) or an instance of one; returns
    it, so it also decorates the class. The analysis, panel, command line
    and report then work on its datasets. It is matched after the ones
    registered before it and before the generic one; a dataset names it in
    ``dataset.info["imagenetx"]["benchmark"]``."""
    BENCHMARKS.register(getattr(benchmark, "name", None), benchmark)
    return benchmark


def benchmarks() -> dict:
    """``{name: Benchmark}``, most specific first (the generic one last)."""
    known = dict(BENCHMARKS.items())
    known["generic"] = _generic()
    return known


def loadable_benchmarks() -> dict:
    """``{name: Benchmark}`` of the benchmarks that say where their data is
    loaded from (``Benchmark.loading``): the built-in ones in the order of
    :data:`~imagenetx.benchmarks.loading.LOADINGS`, then those registered."""
    known = benchmarks()
    order = [*LOADINGS, *(n for n in known if n not in LOADINGS)]
    return {n: known[n] for n in order if n in known and known[n].loading is not None}


@functools.lru_cache(maxsize=None)
def _generic():
    """The benchmark of any dataset, sliced by any categorical field."""
    from imagenetx.benchmarks.base import Benchmark  # lazy: start-up

    return Benchmark()


def get_benchmark(samples, name: str = None, settings=None):
    """The benchmark called ``name``, or the one a dataset holds: the name
    in ``dataset.info["imagenetx"]["benchmark"]``, else the first whose
    fields the dataset has.

    Raises:
        ImageNetXError: for an unknown name
    """
    known = benchmarks()
    if name is None:
        info = samples._dataset.info.get("imagenetx") or {}
        name = info.get("benchmark") if isinstance(info, dict) else None
        if name not in known:
            return next(b for b in known.values() if b.matches(samples, settings))
    if name not in known:
        raise BENCHMARKS.unknown(name, list(known))
    return known[name]


def error_ratio_metric(samples, gt_field: str = "ground_truth") -> Optional[List[str]]:
    """The custom metrics a run's evaluation computes for FiftyOne's Model
    Evaluation panel: ``[ERROR_RATIO_METRIC]`` (the error ratio per slice)
    where a benchmark slices the samples (ImageNet-X's factors, ImageNet-D's
    nuisances, ...) with the fields its error ratios need and FiftyOne finds
    the plugin; else None (FiftyOne would warn that it failed)."""
    import fiftyone.operators as foo

    from imagenetx.benchmarks.scenarios import FieldNames  # lazy: start-up
    from imagenetx.store.evaluation import ERROR_RATIO_METRIC  # lazy: start-up

    benchmark = get_benchmark(samples)
    if benchmark.default_slicing is None:
        return None
    try:
        benchmark.check_fields(samples, FieldNames(gt_field=gt_field))
        foo.get_operator(ERROR_RATIO_METRIC)
    except (ImageNetXError, ValueError):  # no such fields; the plugin is not installed
        return None
    return [ERROR_RATIO_METRIC]
