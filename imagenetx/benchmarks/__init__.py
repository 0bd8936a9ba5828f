"""Robustness benchmarks: each module or folder says how to load its data
and which slicings and label spaces it offers (a
:class:`~imagenetx.benchmarks.base.Benchmark`). The analysis engine, panel,
command line and report work on any of them.

-   :mod:`~imagenetx.benchmarks.imagenet_x`: ImageNet-X factors
-   :mod:`~imagenetx.benchmarks.imagenet_d`: ImageNet-D nuisances
-   :mod:`~imagenetx.benchmarks.cue_conflict`: texture-shape cue conflict
-   :mod:`~imagenetx.benchmarks.imagenet_e`: attribute edits, grouped
-   :mod:`~imagenetx.benchmarks.ood`: ImageNet-A, -R, -Sketch, V2 and -C
    from their release folders
-   :mod:`~imagenetx.benchmarks.base`: the generic benchmark, any dataset
    sliced by any categorical field

:func:`register_benchmark` adds another (docs/extending.md). A benchmark
here says what it *is* and how its data is *loaded*; how it is *shown*
(its charts in the App's panel) is registered in
:mod:`imagenetx.present.charts`.
"""

from typing import Dict

from imagenetx.benchmarks.loading import LOADINGS
from imagenetx.errors import ImageNetXError

#: benchmarks added with :func:`register_benchmark`, by name
REGISTERED: Dict[str, object] = {}


def register_benchmark(benchmark) -> None:
    """Adds a benchmark (an instance of a
    :class:`~imagenetx.benchmarks.base.Benchmark` subclass): the analysis,
    panel, command line and report then work on its datasets. It is looked
    at after the built-in ones and before the generic one; a dataset names
    it in ``dataset.info["imagenetx"]["benchmark"]``."""
    if not getattr(benchmark, "name", None) or benchmark.name == "generic":
        raise ImageNetXError(
            f"Cannot register benchmark {benchmark!r}: give its class a `name` "
            "other than 'generic'")
    REGISTERED[benchmark.name] = benchmark


def benchmarks() -> dict:
    """``{name: Benchmark}``, most specific first (the generic one last)."""
    # lazy: the command line imports this package to build its parser
    from imagenetx.benchmarks.base import Benchmark  # lazy: start-up
    from imagenetx.benchmarks.cue_conflict.benchmark import CueConflict  # lazy: start-up
    from imagenetx.benchmarks.imagenet_d.benchmark import ImageNetD  # lazy: start-up
    from imagenetx.benchmarks.imagenet_e.benchmark import ImageNetE  # lazy: start-up
    from imagenetx.benchmarks.imagenet_x.benchmark import ImageNetX  # lazy: start-up
    from imagenetx.benchmarks.ood.benchmark import OODBenchmark  # lazy: start-up
    from imagenetx.benchmarks.ood.layouts import LAYOUTS  # lazy: start-up

    ood = tuple(OODBenchmark(layout) for layout in LAYOUTS.values())
    known = {b.name: b for b in (ImageNetE(), ImageNetX(), ImageNetD(), CueConflict(), *ood)}
    known.update(REGISTERED)
    known["generic"] = Benchmark()
    return known


def loadable_benchmarks() -> dict:
    """``{name: Benchmark}`` of the benchmarks that say where their data is
    loaded from (``Benchmark.loading``): the built-in ones in the order of
    :data:`~imagenetx.benchmarks.loading.LOADINGS`, then those registered."""
    known = benchmarks()
    order = [*LOADINGS, *(n for n in known if n not in LOADINGS)]
    return {n: known[n] for n in order if n in known and known[n].loading is not None}


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
        raise ImageNetXError(
            f"Unknown benchmark '{name}': use one of {', '.join(known)}"
        )
    return known[name]
