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
"""

from imagenetx.errors import ImageNetXError


def benchmarks() -> dict:
    """``{name: Benchmark}``, most specific first (the generic one last)."""
    from imagenetx.benchmarks.base import Benchmark
    from imagenetx.benchmarks.cue_conflict.benchmark import CueConflict
    from imagenetx.benchmarks.imagenet_d.benchmark import ImageNetD
    from imagenetx.benchmarks.imagenet_e.benchmark import ImageNetE
    from imagenetx.benchmarks.imagenet_x.benchmark import ImageNetX
    from imagenetx.benchmarks.ood.benchmark import OODBenchmark
    from imagenetx.benchmarks.ood.layouts import LAYOUTS

    ood = tuple(OODBenchmark(layout) for layout in LAYOUTS.values())
    return {b.name: b for b in (ImageNetE(), ImageNetX(), ImageNetD(), CueConflict(), *ood,
                                Benchmark())}


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
