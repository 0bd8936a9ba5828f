"""The 16 entry-level categories of the cue-conflict experiments and how a
1000-way ImageNet model's probabilities map onto them.

The mapping is model-vs-human's ``ImageNetProbabilitiesTo16ClassesMapping``:
a category's probability is the mean of the softmax probabilities of its
ImageNet indices (``human_categories.json``), and the decision is the best
category. Categories are indexed in alphabetical order, as model-vs-human
sorts them.
"""

import json
from functools import lru_cache
from importlib import resources
from typing import Dict, Tuple

import numpy as np

from imagenetx.errors import ImageNetXError

_DATA = "data/cue_conflict"


@lru_cache(maxsize=1)
def category_indices() -> Dict[str, Tuple[int, ...]]:
    """``{category: ImageNet-1k indices}``, categories in alphabetical order."""
    text = resources.files("imagenetx.classes").joinpath(
        f"{_DATA}/human_categories.json").read_text()
    table = json.loads(text)
    return {c: tuple(table[c]) for c in sorted(table)}


def categories() -> Tuple[str, ...]:
    """The 16 categories, alphabetical (their index is their position)."""
    return tuple(category_indices())


def category_index(category: str) -> int:
    """The index of a category.

    Raises:
        ImageNetXError: for a name that is not one of the 16
    """
    try:
        return categories().index(category)
    except ValueError:
        raise ImageNetXError(
            f"'{category}' is not a cue-conflict category: use one of "
            f"{', '.join(categories())}") from None


@lru_cache(maxsize=1)
def mean_matrix(num_classes: int = 1000) -> np.ndarray:
    """``(num_classes, 16)`` float32: ``probs @ M`` is each category's mean
    probability over its ImageNet indices."""
    m = np.zeros((num_classes, len(categories())), dtype=np.float32)
    for j, idx in enumerate(category_indices().values()):
        m[list(idx), j] = 1.0 / len(idx)
    return m


@lru_cache(maxsize=1)
def stimulus_files() -> Tuple[str, ...]:
    """The 1,280 stimuli as ``<shape>/<shape><i>-<texture><j>.png``."""
    text = resources.files("imagenetx.classes").joinpath(
        f"{_DATA}/stimuli.txt").read_text()
    return tuple(line for line in text.splitlines() if line)
