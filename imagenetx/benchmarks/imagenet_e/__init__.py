"""ImageNet-E: attribute edits of ImageNet val images as grouped datasets
(one group per source image, one slice per edit), and the contract any
dataset of edits follows so that the paired scores apply to it."""

from imagenetx.benchmarks.imagenet_e.loaders import load_imagenet_e

__all__ = ["load_imagenet_e"]
