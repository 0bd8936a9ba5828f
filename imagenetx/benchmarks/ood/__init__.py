"""ImageNet's out-of-distribution benchmarks read from their release
folders: ImageNet-A and -R (200 classes each, scored by the argmax over
them), ImageNet-Sketch, ImageNetV2 (three variants), ImageNet-C and ImageNet-C-bar
(corruption x severity).

-   :mod:`~imagenetx.benchmarks.ood.layouts`: the table of release layouts
    and the folder walk
-   :mod:`~imagenetx.benchmarks.ood.loaders`: a release folder -> a
    FiftyOne dataset (the sample contract)
-   :mod:`~imagenetx.benchmarks.ood.benchmark`: slicings and label spaces
    for the analysis engine
"""

from imagenetx.benchmarks.ood.layouts import LAYOUTS, get_layout

__all__ = ["LAYOUTS", "OODSummary", "get_layout", "load_ood_dir"]


def __getattr__(name):
    # the loaders import FiftyOne: only when asked for, so reading LAYOUTS
    # (the command line's options) stays light
    if name in ("OODSummary", "load_ood_dir"):
        from imagenetx.benchmarks.ood import loaders  # lazy: start-up

        return getattr(loaders, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
