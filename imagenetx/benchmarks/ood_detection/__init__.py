"""OOD-detection benchmarks: ImageNet-O, NINCO and OpenOOD v1.5's ImageNet-1K
benchmark, ImageNet val images as in-distribution beside each OOD set.

-   :mod:`~imagenetx.benchmarks.ood_detection.contract`: the sample fields
    and their values (the data contract)
"""
