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
they are drawn directly, as :func:`~imagenetx.metrics.stats.
error_ratio_intervals` does for error ratios.
"""

import math
from dataclasses import dataclass
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

    Args:
        n, shape, texture: ``(k,)`` counts: images, shape and texture
            decisions

    Returns:
        ``(low, high)``, ``(k,)`` each; NaN where a row has no shape or
        texture decision
    """
    n = np.asarray(n, dtype=np.int64)
    counts = np.stack([shape, texture, n - shape - texture], axis=1)
    rng = np.random.default_rng(seed)
    bias = np.full((resamples, len(n)), np.nan)
    for i in np.flatnonzero(n > 0):
        draws = rng.multinomial(n[i], counts[i] / n[i], size=resamples)
        decided = draws[:, 0] + draws[:, 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            bias[:, i] = np.where(decided > 0, draws[:, 0] / decided, np.nan)
    tail = (1 - level) / 2
    low, high = _nan_quantiles(bias, tail, 1 - tail)
    empty = shape + texture == 0
    low[empty] = np.nan
    high[empty] = np.nan
    return low, high


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
