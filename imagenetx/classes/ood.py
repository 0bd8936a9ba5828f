"""The 200-class subsets of ImageNet-A and ImageNet-R (package data,
``data/ood/ood_class_subsets.json``): ImageNet-1k indices, sorted.

A 1000-way model is scored on these benchmarks by restricting its output to
the subset (argmax over the 200 logits), as the authors and timm's
``validate.py`` (``valid_labels``) do.
"""

import json
from functools import lru_cache
from importlib import resources
from typing import Dict, Tuple

from imagenetx.classes.imagenet import NUM_CLASSES
from imagenetx.errors import ImageNetXError

_FILE = "data/ood/ood_class_subsets.json"
#: the subsets the file holds
SUBSETS = ("imagenet_a", "imagenet_r")


@lru_cache(maxsize=1)
def _subsets() -> Dict[str, Tuple[int, ...]]:
    table = json.loads(resources.files("imagenetx.classes").joinpath(_FILE).read_text())
    out = {}
    for name in SUBSETS:
        values = tuple(table.get(name) or ())
        if (len(values) != 200 or len(set(values)) != 200
                or not all(isinstance(v, int) and 0 <= v < NUM_CLASSES for v in values)):
            raise ImageNetXError(
                f"The packaged class subset '{name}' in imagenetx/classes/{_FILE} is "
                "not 200 distinct ImageNet-1k indices: reinstall the package")
        out[name] = tuple(sorted(values))
    return out


def subset_indices(name: str) -> Tuple[int, ...]:
    """The sorted ImageNet-1k indices of ``"imagenet_a"`` or ``"imagenet_r"``.

    Raises:
        ImageNetXError: for another name
    """
    subsets = _subsets()
    if name not in subsets:
        raise ImageNetXError(
            f"Unknown class subset '{name}': use one of {', '.join(SUBSETS)}")
    return subsets[name]
