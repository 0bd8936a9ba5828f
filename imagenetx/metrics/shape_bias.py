"""Shape bias (Geirhos et al., ICLR 2019) on arrays.

Over cue-conflict images (shape and texture categories differ), a decision
is a *shape* decision when it names the shape category and a *texture*
decision when it names the texture category::

    shape_bias = shape decisions / (shape decisions + texture decisions)

as model-vs-human's ``ShapeBias`` analysis computes it. Shape and texture
accuracy are those decisions' fractions of the images answered here
(model-vs-human divides by all trials, the 80 no-conflict ones included;
the bias is the same either way).

The interval is a percentile bootstrap over images. A shape bias depends
only on three counts (shape, texture, other decisions), which under
resampling of images follow a multinomial with the observed proportions:
they are drawn directly (as two binomials), as :func:`~imagenetx.metrics.
stats.error_ratio_intervals` does for error ratios.
"""

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Sequence

import numpy as np

from imagenetx.metrics.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    INTERVAL_LEVEL,
    _nan_quantiles,
    to_json,
)


@dataclass(frozen=True)
class ShapeBias:
    """One decision maker over a set of cue-conflict images."""

    n: int
    shape: int
    texture: int
    ci_low: float = math.nan
    ci_high: float = math.nan

    @property
    def shape_bias(self) -> float:
        decided = self.shape + self.texture
        return self.shape / decided if decided else math.nan

    @property
    def shape_accuracy(self) -> float:
        return self.shape / self.n if self.n else math.nan

    @property
    def texture_accuracy(self) -> float:
        return self.texture / self.n if self.n else math.nan

    def to_dict(self) -> dict:
        return {k: to_json(v) for k, v in (
            ("shape_bias", self.shape_bias), ("shape_accuracy", self.shape_accuracy),
            ("texture_accuracy", self.texture_accuracy), ("n", self.n),
            ("shape", self.shape), ("texture", self.texture),
            ("ci_low", self.ci_low), ("ci_high", self.ci_high))}


def shape_bias_intervals(n: np.ndarray, shape: np.ndarray, texture: np.ndarray,
                         resamples: int = BOOTSTRAP_RESAMPLES,
                         seed: int = BOOTSTRAP_SEED,
                         level: float = INTERVAL_LEVEL):
    """Percentile bootstrap intervals of each row's shape bias.

    Each row draws from its own generator, seeded by ``seed`` and its three
    counts: a row's interval depends on nothing else (not on which other
    rows or models are computed beside it), so equal counts give equal
    intervals and repeated calls are served from a cache.

    Args:
        n, shape, texture: ``(k,)`` counts: images, shape and texture
            decisions

    Returns:
        ``(low, high)``, ``(k,)`` each; NaN where a row has no shape or
        texture decision
    """
    rows = [_row_interval(int(a), int(b), int(c), resamples, seed, level)
            for a, b, c in zip(n, shape, texture)]
    low, high = np.array(rows, dtype=np.float64).reshape(-1, 2).T
    return low, high


@lru_cache(maxsize=65536)
def _row_interval(n: int, shape: int, texture: int, resamples: int,
                  seed: int, level: float) -> tuple:
    if shape + texture == 0:
        return math.nan, math.nan
    rng = np.random.default_rng([seed, n, shape, texture])
    # the multinomial of (shape, texture, other) by the chain rule:
    # shape ~ Bin(n, p_s), then texture ~ Bin(n - shape, p_t / (1 - p_s))
    draw_shape = rng.binomial(n, shape / n, size=resamples)
    draw_texture = rng.binomial(n - draw_shape, texture / max(n - shape, 1))
    decided = draw_shape + draw_texture
    with np.errstate(invalid="ignore", divide="ignore"):
        bias = np.where(decided > 0, draw_shape / decided, np.nan)
    tail = (1 - level) / 2
    low, high = _nan_quantiles(bias[:, None], tail, 1 - tail)
    return float(low[0]), float(high[0])


def shape_bias_table(shape_hit: np.ndarray, texture_hit: np.ndarray,
                     category_ids: np.ndarray, categories: Sequence[str],
                     intervals: bool = True,
                     resamples: int = BOOTSTRAP_RESAMPLES,
                     seed: int = BOOTSTRAP_SEED,
                     level: float = INTERVAL_LEVEL):
    """Shape bias overall and per category of one decision maker.

    Args:
        shape_hit, texture_hit: ``(n,)`` bool, whether each cue-conflict
            image's decision names its shape / its texture category
        category_ids: ``(n,)`` each image's category (the row of the
            classic plot: the shape category), an index into ``categories``
        categories: the category names
        intervals (True): compute bootstrap intervals

    Returns:
        ``(overall ShapeBias, {category: ShapeBias})``
    """
    shape_hit = np.asarray(shape_hit, dtype=bool)
    texture_hit = np.asarray(texture_hit, dtype=bool)
    if (shape_hit & texture_hit).any():
        raise ValueError("a decision cannot name both cues: pass cue-conflict "
                         "images only (shape and texture differ)")
    k = len(categories)
    ids = np.asarray(category_ids, dtype=np.int64)
    n = np.append(np.bincount(ids, minlength=k), len(ids))
    s = np.append(np.bincount(ids, weights=shape_hit, minlength=k), shape_hit.sum())
    t = np.append(np.bincount(ids, weights=texture_hit, minlength=k), texture_hit.sum())
    s, t = s.astype(np.int64), t.astype(np.int64)
    if intervals:
        low, high = shape_bias_intervals(n, s, t, resamples, seed, level)
    else:
        low = high = np.full(k + 1, np.nan)
    rows = [ShapeBias(int(n[i]), int(s[i]), int(t[i]), float(low[i]), float(high[i]))
            for i in range(k + 1)]
    per_category: Dict[str, ShapeBias] = dict(zip(categories, rows[:k]))
    return rows[k], per_category
