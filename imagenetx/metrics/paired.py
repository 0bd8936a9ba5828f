"""Paired scores of edited images against their originals, on arrays.

Each group is one source image: its original and its edits (one per
variant). Over the groups where a model answered both the original and a
variant (the *pairs*):

-   ``top1_original``, ``top1_edit``: accuracies on the same groups
-   ``drop = top1_original - top1_edit`` (positive: the edit hurts)
-   ``flip_rate``: the fraction of pairs whose predicted class changed
-   ``broken``: original right and edit wrong; ``fixed``: the reverse
-   ``p``: McNemar's exact test of ``broken`` against ``fixed``, two-sided:
    ``min(1, 2 P[X <= min(b, c)])``, ``X ~ Bin(b + c, 1/2)``
-   ``ci_low``, ``ci_high``: the paired percentile bootstrap interval of the
    drop, resampling groups. The drop depends only on three counts
    (broken, fixed, the rest), which under resampling of groups follow a
    multinomial with the observed proportions; they are drawn directly (the
    discordant pairs, then the broken among them), as
    :func:`~imagenetx.metrics.stats.error_ratio_intervals` does, from a
    generator seeded by ``seed`` and the row's counts, so a row's interval
    depends on nothing else.

Rows are variants, or variant x slice of the source images (an ImageNet-X
factor) when a membership matrix is given. Pure numpy (and the project's
McNemar test): no FiftyOne.
"""

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

import numpy as np

from imagenetx.metrics.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    INTERVAL_LEVEL,
    holm,
    mcnemar_counts,
    to_json,
)


@dataclass(frozen=True)
class PairedCounts:
    """The counts of paired scores; arrays of one shape, ``(v,)`` or
    ``(v, k)`` (variant x slice of the source images).

    Attributes:
        n: pairs (groups where both the original and the edit are answered)
        original: pairs whose original is right
        broken: original right, edit wrong
        fixed: original wrong, edit right
        flipped: predicted class changed
    """

    n: np.ndarray
    original: np.ndarray
    broken: np.ndarray
    fixed: np.ndarray
    flipped: np.ndarray

    def row(self, i: int) -> "PairedCounts":
        """Row ``i`` of ``(v, k)`` counts: one variant's ``(k,)`` counts."""
        return PairedCounts(self.n[i], self.original[i], self.broken[i],
                            self.fixed[i], self.flipped[i])


def paired_counts(ori_correct, ori_pred, edit_correct, edit_pred, paired,
                  membership: Optional[np.ndarray] = None) -> PairedCounts:
    """Counts pairs per variant (and per slice of the source images).

    Args:
        ori_correct: ``(g,)`` bool, each group's original is right
        ori_pred: ``(g,)`` int, the original's predicted class
        edit_correct: ``(g, v)`` bool, each variant's edit is right
        edit_pred: ``(g, v)`` int, the edit's predicted class
        paired: ``(g, v)`` bool, both original and edit answered
        membership (None): ``(g, k)`` bool, group x slice (e.g. the source
            image's ImageNet-X factors); None: counts per variant only

    Returns:
        :class:`PairedCounts` of shape ``(v,)``, or ``(v, k)`` with
        ``membership``
    """
    paired = np.asarray(paired, dtype=bool)
    ori = np.asarray(ori_correct, dtype=bool)[:, None] & paired
    edit = np.asarray(edit_correct, dtype=bool) & paired
    flipped = (np.asarray(ori_pred)[:, None] != np.asarray(edit_pred)) & paired
    cells = [paired, ori, ori & ~edit, edit & ~ori, flipped]
    if membership is None:
        out = [c.sum(axis=0) for c in cells]
    else:
        # one (v, g) @ (g, k) product per count, in integers: numpy's own
        # loop, exact, and free of BLAS threads (which thrash a busy machine)
        m = np.asarray(membership, dtype=np.int64)
        out = [c.T.astype(np.int64) @ m for c in cells]
    return PairedCounts(*(np.asarray(c, dtype=np.int64) for c in out))


@dataclass(frozen=True)
class PairedTable:
    """Paired scores of named rows (variants, or one variant's slices).

    Attributes:
        names: the row names
        n, original, broken, fixed, flipped: ``(k,)`` counts
        p: ``(k,)`` McNemar's exact p-values (NaN without pairs)
        p_holm: ``(k,)`` after Holm's correction over the rows
        ci_low, ci_high: ``(k,)`` interval of the drop (NaN when not
            computed or without pairs)
    """

    names: tuple
    n: np.ndarray
    original: np.ndarray
    broken: np.ndarray
    fixed: np.ndarray
    flipped: np.ndarray
    p: np.ndarray
    p_holm: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray

    def _ratio(self, x) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n > 0, x / np.maximum(self.n, 1), np.nan)

    @property
    def top1_original(self) -> np.ndarray:
        return self._ratio(self.original)

    @property
    def top1_edit(self) -> np.ndarray:
        return self._ratio(self.original - self.broken + self.fixed)

    @property
    def drop(self) -> np.ndarray:
        return self._ratio(self.broken - self.fixed)

    @property
    def flip_rate(self) -> np.ndarray:
        return self._ratio(self.flipped)

    def row(self, i: int) -> dict:
        """One row, JSON-ready."""
        return {
            "n": int(self.n[i]),
            "top1_original": to_json(self.top1_original[i]),
            "top1": to_json(self.top1_edit[i]),
            "drop": to_json(self.drop[i]),
            "ci_low": to_json(self.ci_low[i]),
            "ci_high": to_json(self.ci_high[i]),
            "flip_rate": to_json(self.flip_rate[i]),
            "broken": int(self.broken[i]),
            "fixed": int(self.fixed[i]),
            "p": to_json(self.p[i]),
            "p_holm": to_json(self.p_holm[i]),
        }

    def to_dict(self) -> dict:
        """``{name: row}``."""
        return {str(name): self.row(i) for i, name in enumerate(self.names)}


def paired_table(counts: PairedCounts, names: Sequence, intervals: bool = True,
                 resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
                 level: float = INTERVAL_LEVEL) -> PairedTable:
    """Paired scores of rows of counts (one-dimensional).

    Args:
        counts: ``(k,)`` counts (a row of :func:`paired_counts`' result)
        names: the ``k`` row names
        intervals (True): compute the bootstrap intervals of the drop
        resamples (1000), seed (0), level (0.95): the bootstrap settings
    """
    n = counts.n
    _, p, _ = mcnemar_counts(counts.broken, counts.fixed, exact_below=math.inf)
    p = np.where(n > 0, p, np.nan)
    low = np.full(len(n), np.nan)
    high = np.full(len(n), np.nan)
    if intervals:
        for i in range(len(n)):
            low[i], high[i] = drop_interval(int(n[i]), int(counts.broken[i]),
                                            int(counts.fixed[i]), resamples, seed, level)
    return PairedTable(tuple(names), n, counts.original, counts.broken, counts.fixed,
                       counts.flipped, p, holm(p), low, high)


@lru_cache(maxsize=65536)
def drop_interval(n: int, broken: int, fixed: int,
                  resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
                  level: float = INTERVAL_LEVEL) -> tuple:
    """The paired bootstrap interval of a drop, ``(broken - fixed) / n``
    (see the module docstring); ``(nan, nan)`` without pairs."""
    if n == 0:
        return math.nan, math.nan
    rng = np.random.default_rng([seed, n, broken, fixed])
    # the multinomial of (broken, fixed, rest) by the chain rule: the
    # discordant pairs, then which of them are broken (the faster order:
    # the second draw's sizes are small)
    discordant = broken + fixed
    draw_discordant = rng.binomial(n, discordant / n, size=resamples)
    draw_broken = rng.binomial(draw_discordant, broken / max(discordant, 1))
    diffs = np.sort(2 * draw_broken - draw_discordant)
    tail = (1 - level) / 2
    # numpy's default (linear) quantile, without np.quantile's overhead
    out = []
    for q in (tail, 1 - tail):
        pos = q * (resamples - 1)
        below = int(math.floor(pos))
        above = min(below + 1, resamples - 1)
        out.append((diffs[below] + (diffs[above] - diffs[below]) * (pos - below)) / n)
    return float(out[0]), float(out[1])
