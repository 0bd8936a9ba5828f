"""ImageNet-D (Zhang et al., CVPR 2024): 4,835 diffusion-generated hard images
of 113 classes in three nuisance subsets, background, texture and material.

-   :mod:`~imagenetx.benchmarks.imagenet_d.loaders`: the release folder and
    Hugging Face Hub copies -> a FiftyOne dataset (the sample contract)
-   :mod:`~imagenetx.benchmarks.imagenet_d.benchmark`: its slicings and
    label space for the analysis engine
"""

from imagenetx.benchmarks.imagenet_d.benchmark import ImageNetD
from imagenetx.benchmarks.imagenet_d.loaders import (
    ImageNetDSummary,
    from_hub_dataset,
    load_imagenet_d_dir,
    load_imagenet_d_hub,
)
