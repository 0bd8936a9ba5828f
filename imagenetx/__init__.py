"""ImageNet-X for FiftyOne: why ImageNet classifiers fail, factor by factor.

The library behind the ``imagenetx`` command and the FiftyOne plugin. Import
the modules you need, e.g. ``from imagenetx.analysis import compute_ratios``;
importing this package alone loads neither FiftyOne nor torch.
"""

__version__ = "0.1.0"
