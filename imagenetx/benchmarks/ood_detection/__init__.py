"""OOD-detection benchmarks: ImageNet-O, NINCO and OpenOOD v1.5's ImageNet-1K
benchmark, ImageNet val images as in-distribution beside each OOD set.

-   :mod:`~imagenetx.benchmarks.ood_detection.contract`: the sample fields
    and their values (the data contract)
-   :mod:`~imagenetx.benchmarks.ood_detection.loaders`: the release folders
    (and OpenOOD's lists) -> a FiftyOne dataset
-   :mod:`~imagenetx.benchmarks.ood_detection.unit_tests`: NINCO's OOD unit
    tests, generated, seeded
-   :mod:`~imagenetx.benchmarks.ood_detection.openood`: OpenOOD's lists
-   :mod:`~imagenetx.benchmarks.ood_detection.benchmark`: slicings and label
    space for the analysis engine
"""
