"""Decisions in a benchmark's own classes from a 1000-way ImageNet model.

Some benchmarks ask a question with fewer answers than ImageNet has classes
(the 16 categories of the cue-conflict experiments). A :class:`Decisions`
maps each image's 1000 softmax probabilities onto those answers with one
matrix product, ``scores = probs @ matrix``; the decision is the best score.
"""

from dataclasses import dataclass
from typing import Tuple

import numpy as np


@dataclass(frozen=True, eq=False)
class Decisions:
    """A linear map from ImageNet-1k probabilities to a benchmark's classes.

    Attributes:
        name: what the mapping is, for messages
        labels: the benchmark's class labels; a decision's ``class_index``
            is its position here
        matrix: ``(1000, len(labels))`` float32
    """

    name: str
    labels: Tuple[str, ...]
    matrix: np.ndarray

    @property
    def num_inputs(self) -> int:
        return self.matrix.shape[0]
