"""Rank correlation and rank position over a population of models.

Gavrikov & Keuper (CVPR 2024) relate a bias (shape bias) to a
generalization measure across models by Kendall's rank correlation,
``scipy.stats.kendalltau`` with its defaults (tau-b, exact or asymptotic
p-value as scipy chooses, two-sided). Models missing either value are left
out of that pair.
"""

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
from scipy import stats

from imagenetx.metrics.stats import to_json


@dataclass(frozen=True)
class RankCorrelation:
    """Kendall's tau between two measures over ``n`` models (NaN when
    fewer than two models or one measure is constant)."""

    tau: float
    p_value: float
    n: int

    def to_dict(self) -> dict:
        return {"tau": to_json(self.tau), "p_value": to_json(self.p_value),
                "n": self.n}


def kendall_tau(x, y) -> RankCorrelation:
    """Kendall's tau-b of ``x`` and ``y`` (``scipy.stats.kendalltau``,
    two-sided p-value) over the positions where both are finite."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-d of one length, got {x.shape} and {y.shape}")
    keep = np.isfinite(x) & np.isfinite(y)
    n = int(keep.sum())
    x, y = x[keep], y[keep]
    if n < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return RankCorrelation(math.nan, math.nan, n)
    result = stats.kendalltau(x, y)
    return RankCorrelation(float(result.statistic), float(result.pvalue), n)


@dataclass(frozen=True)
class RankPosition:
    """Where one value stands among a population's values.

    Attributes:
        rank: 1 + how many population values are higher (1 = the highest;
            None for a value that is not a number)
        of: the population's size + 1 (the value itself counted in)
        percentile: percentage of the population below the value, ties
            counted half (``scipy.stats.percentileofscore(kind="mean")``)
    """

    rank: Optional[int]
    of: int
    percentile: float

    def to_dict(self) -> dict:
        return {"rank": self.rank, "of": self.of,
                "percentile": to_json(self.percentile)}


def rank_position(population, value: float) -> RankPosition:
    """The rank and percentile of ``value`` among ``population`` (its
    non-finite entries left out)."""
    population = np.asarray(population, dtype=float)
    population = population[np.isfinite(population)]
    if not math.isfinite(value) or population.size == 0:
        return RankPosition(None, population.size + 1, math.nan)
    below = int((population < value).sum())
    equal = int((population == value).sum())
    above = population.size - below - equal
    return RankPosition(above + 1, population.size + 1,
                        100.0 * (below + 0.5 * equal) / population.size)
