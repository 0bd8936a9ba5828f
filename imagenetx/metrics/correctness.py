"""Whether predictions are correct: exact class, in a set of valid classes
(ReaL, ImageNet-D's class -> ImageNet-1k map), same group (meta-class), and
argmax over a class subset. Pure numpy; the label spaces of
:mod:`imagenetx.classes.spaces` choose among these."""

from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class RealSets:
    """ReaL label sets of many images, flattened (CSR layout).

    Attributes:
        flat: all the labels, image after image
        offsets: ``(n + 1,)``; the labels of image ``i`` are
            ``flat[offsets[i]:offsets[i + 1]]``
    """

    flat: np.ndarray
    offsets: np.ndarray

    @classmethod
    def from_lists(cls, lists: Sequence) -> "RealSets":
        """From one list of class indices per image (None is not allowed)."""
        sizes = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        offsets = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        flat = np.fromiter(
            (label for labels in lists for label in labels),
            dtype=np.int64,
            count=int(offsets[-1]),
        )
        return cls(flat, offsets)

    def __len__(self):
        return len(self.offsets) - 1

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def contains(self, predicted: np.ndarray) -> np.ndarray:
        """Whether each image's set holds its predicted class."""
        predicted = np.asarray(predicted, dtype=np.int64)
        rows = np.repeat(np.arange(len(self)), self.sizes)
        hit = self.flat == predicted[rows]
        return np.bincount(rows[hit], minlength=len(self)) > 0


def real_correct(predicted: np.ndarray, real_labels) -> np.ndarray:
    """Whether each prediction is in the image's ReaL label set.

    This is the original toolkit's convention (``paper`` mode): an image
    whose ReaL set is empty counts as wrong.

    Args:
        predicted: ``(n,)`` predicted class indices
        real_labels: ``n`` lists of valid class indices, or a
            :class:`RealSets`

    Returns:
        a ``(n,)`` bool array
    """
    if not isinstance(real_labels, RealSets):
        real_labels = RealSets.from_lists(real_labels)
    return real_labels.contains(predicted)


def same_group(predicted: np.ndarray, truth: np.ndarray, group_of: np.ndarray) -> np.ndarray:
    """Whether the predicted class lies in the true class's group, e.g. its
    ImageNet-X meta-class (two classes of "other" count as the same group, as
    in the toolkit).

    Args:
        predicted, truth: ``(n,)`` class indices
        group_of: ``(num_classes,)`` group id of each class
    """
    group_of = np.asarray(group_of)
    return group_of[np.asarray(predicted)] == group_of[np.asarray(truth)]


def restricted_argmax(scores: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The best class among ``valid`` classes only: argmax of the scores
    restricted to a class subset, as ImageNet-A/R are scored (timm's
    ``validate.py`` with ``valid_labels``).

    Args:
        scores: ``(n, num_classes)`` logits or probabilities
        valid: the allowed class indices

    Returns:
        ``(n,)`` class indices, each one of ``valid``
    """
    valid = np.asarray(valid, dtype=np.int64)
    return valid[np.argmax(np.asarray(scores)[:, valid], axis=1)]
