"""Slicings: which images belong to which slice.

A :class:`Slicing` names a sample field (``imagenetx.top_factor``,
``nuisance``, ``tags``, ...), whether it holds one value or a list per image,
and the ordered slice values. It turns that field's column into the
``(n, k)`` image x slice membership matrix every table here is computed
from. Pure Python and numpy: reading the column is the analysis layer's job.
"""

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np


@dataclass(frozen=True)
class Slicing:
    """One way to cut a dataset into slices.

    Attributes:
        name: short name, e.g. ``"top_factor"``
        path: the sample field path holding each image's slice value(s)
        values: the slice values, in display order
        multi: whether the field holds a list (an image may lie in several
            slices, or none)
        title: what one slice is called in tables and charts, e.g.
            ``"factor"``
    """

    name: str
    path: str
    values: tuple
    multi: bool = False
    title: Optional[str] = None

    @property
    def label(self) -> str:
        """What a slice is called: :attr:`title`, else :attr:`name`."""
        return self.title or self.name

    def index(self) -> dict:
        """``{value: column}``."""
        return {v: i for i, v in enumerate(self.values)}

    def lookup(self, value):
        """The slice value that ``value`` names, also when given as text
        (forms and the command line send ``"3"`` or ``"True"`` for a
        field's ints and booleans); None when it names none."""
        if value in self.index():
            return value
        return {str(v): v for v in self.values}.get(str(value))

    def membership(self, column: Sequence) -> np.ndarray:
        """The ``(n, k)`` bool matrix of a column of this field's values:
        one value (or None) per image, or one list (or None) per image when
        :attr:`multi`. Values outside :attr:`values` are ignored."""
        index = self.index()
        k = len(self.values)
        if not self.multi:
            idx = self.ids(column)
            matrix = np.zeros((len(column), k), dtype=bool)
            rows = np.flatnonzero(idx >= 0)
            matrix[rows, idx[rows]] = True
            return matrix
        lists = [v or () for v in column]
        sizes = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        cols = np.fromiter(
            (index.get(v, -1) for values in lists for v in values),
            dtype=np.int64, count=int(sizes.sum()),
        )
        rows = np.repeat(np.arange(len(lists)), sizes)
        matrix = np.zeros((len(lists), k), dtype=bool)
        ok = cols >= 0
        matrix[rows[ok], cols[ok]] = True
        return matrix

    def ids(self, column: Sequence) -> np.ndarray:
        """Each image's slice index (-1 for none) for a single-valued
        slicing, e.g. as group ids."""
        if self.multi:
            raise ValueError(f"slicing '{self.name}' is multi-valued")
        index = self.index()
        return np.fromiter(
            (index.get(v, -1) for v in column), dtype=np.int64,
            count=len(column),
        )


def value_order(value) -> tuple:
    """Sort key of a slice value: numbers, and strings that read as one
    (``"90"``, ``"-20"``, ``"0.5"``), by their value; other strings after
    them, in text order. A text field of angles sorts 0, 90, 180, 270."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    return (0, number, "") if math.isfinite(number) else (1, 0.0, str(value))


def check_membership(correct: np.ndarray, membership: np.ndarray,
                     names: Sequence) -> np.ndarray:
    """``membership`` as a bool matrix of shape ``(len(correct),
    len(names))``; raises ValueError otherwise."""
    membership = np.asarray(membership, dtype=bool)
    if membership.shape != (len(correct), len(names)):
        raise ValueError(
            f"membership must have shape ({len(correct)}, {len(names)}), "
            f"not {membership.shape}"
        )
    return membership
