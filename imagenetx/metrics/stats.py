"""Uncertainty and significance: bootstrap intervals on error ratios,
McNemar's paired test with Holm's correction, and the Alexander-Govern test
across groups of models (as in the ImageNet-X paper)."""

import math
import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.slicing import check_membership

#: bootstrap defaults of :func:`error_ratio_intervals`
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
INTERVAL_LEVEL = 0.95

#: McNemar: below this many discordant pairs the exact binomial test is used
MCNEMAR_EXACT_BELOW = 25


def to_json(x):
    """A JSON value: numpy scalars to Python, NaN and infinities to None."""
    if x is None:
        return None
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    return x


def error_ratio_intervals(
    n: np.ndarray,
    correct: np.ndarray,
    n_total: int,
    correct_total: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = INTERVAL_LEVEL,
):
    """Percentile bootstrap intervals on each slice's error ratio (a slice:
    an ImageNet-X factor, an ImageNet-D nuisance, ...; "factor" below).

    The bootstrap resamples images with replacement (``resamples`` times,
    from ``np.random.default_rng(seed)``) and recomputes each error ratio,
    denominator included. A factor's error ratio depends only on four
    counts: images with the factor that are right / wrong, images without
    it that are right / wrong. Under resampling of images those four counts
    follow exactly a multinomial distribution with the observed proportions,
    so they are drawn directly: the same bootstrap distribution as
    resampling the image indices, at a cost independent of the number of
    images, and for multi-factor labels too (each factor's interval is
    marginal). Resamples in which a factor has no image are left out of its
    interval. The interval is the central ``level`` percentile range.

    The result depends only on the counts and the seed: not on image order,
    nor on which other models or factors are computed beside it.

    Args:
        n, correct: ``(k,)`` images and correct images per slice
        n_total, correct_total: images and correct images overall
        resamples (1000), seed (0), level (0.95): the bootstrap settings

    Returns:
        ``(low, high)``: two ``(k,)`` float arrays, NaN where a factor has
        no image or the model makes no mistake
    """
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(correct, dtype=np.int64)
    low = np.full(len(n), np.nan)
    high = np.full(len(n), np.nan)
    wrong_total = n_total - correct_total
    if n_total == 0 or wrong_total == 0:
        return low, high
    # the four cells: factor & right, factor & wrong, other & right,
    # other & wrong; a multinomial draw is drawn as the equivalent chain of
    # conditional binomials, vectorised over resamples and factors
    cells = np.stack(
        [c, n - c, correct_total - c, wrong_total - (n - c)], axis=1
    ).astype(np.float64) / n_total
    rng = np.random.default_rng(seed)
    shape = (resamples, len(n))
    left = np.full(shape, n_total, dtype=np.int64)
    draws = []
    for k in range(3):
        mass = cells[:, k:].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            q = np.clip(np.where(mass > 0, cells[:, k] / mass, 0.0), 0.0, 1.0)
        x = rng.binomial(left, q)
        draws.append(x)
        left = left - x
    fr, fw, ow = draws[0], draws[1], left
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (fw / (fr + fw)) * (n_total / (fw + ow))
    ratio[~np.isfinite(ratio)] = np.nan
    tail = (1 - level) / 2
    low, high = _nan_quantiles(ratio, tail, 1 - tail)
    has = n > 0
    low[~has] = np.nan
    high[~has] = np.nan
    return low, high


def _nan_quantiles(values: np.ndarray, lo: float, hi: float):
    """Column-wise quantiles ignoring NaN, numpy's default (linear)
    method: ``np.nanquantile(values, [lo, hi], axis=0)``, vectorised."""
    ordered = np.sort(values, axis=0)  # NaN last
    count = (~np.isnan(values)).sum(axis=0)
    cols = np.arange(values.shape[1])
    out = []
    for q in (lo, hi):
        pos = q * np.maximum(count - 1, 0)
        below = np.floor(pos).astype(np.int64)
        above = np.minimum(below + 1, np.maximum(count - 1, 0))
        frac = pos - below
        a = ordered[below, cols]
        b = ordered[above, cols]
        value = a + (b - a) * frac
        out.append(np.where(count > 0, value, np.nan))
    return out


def holm(pvalues: np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment of p-values (NaN entries are left out of
    the family and stay NaN)."""
    p = np.asarray(pvalues, dtype=np.float64)
    adjusted = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if not len(ok):
        return adjusted
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def mcnemar_counts(a_only, b_only, exact_below: int = MCNEMAR_EXACT_BELOW):
    """McNemar's test from discordant counts.

    With fewer than ``exact_below`` discordant pairs the exact two-sided
    binomial test (``min(1, 2 P[X <= min(b, c)])``, ``X ~ Bin(b + c, 1/2)``);
    otherwise the chi-squared test with continuity correction,
    ``(|b - c| - 1)^2 / (b + c)`` on one degree of freedom.

    Returns:
        ``(statistic, pvalue, method)``: arrays; the statistic is NaN for the
        exact test; method is ``"exact"`` or ``"chi2"``
    """
    from scipy import stats

    b = np.atleast_1d(np.asarray(a_only, dtype=np.int64))
    c = np.atleast_1d(np.asarray(b_only, dtype=np.int64))
    d = b + c
    exact = d < exact_below
    statistic = np.full(b.shape, np.nan)
    p = np.ones(b.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        chi = (np.abs(b - c) - 1.0) ** 2 / d
    big = ~exact
    statistic[big] = chi[big]
    p[big] = stats.chi2.sf(chi[big], 1)
    small = exact & (d > 0)
    p[small] = np.minimum(
        1.0, 2 * stats.binom.cdf(np.minimum(b, c)[small], d[small], 0.5)
    )
    method = np.where(exact, "exact", "chi2")
    return statistic, p, method


@dataclass(frozen=True)
class PairedTest:
    """McNemar's test of two models on the same images, per slice.

    Attributes:
        names: the slice names
        n: ``(k,)`` images in each slice
        a_only: ``(k,)`` images model A gets right and model B wrong
        b_only: ``(k,)`` images model B gets right and model A wrong
        statistic: ``(k,)`` chi-squared statistic (NaN for exact tests)
        p: ``(k,)`` p-values
        p_holm: ``(k,)`` p-values after Holm's correction over the slices
            that have images
        method: ``(k,)`` ``"exact"`` or ``"chi2"``
        overall: the same test over all images: dict with n, a_only,
            b_only, statistic, p, method
    """

    names: tuple
    n: np.ndarray
    a_only: np.ndarray
    b_only: np.ndarray
    statistic: np.ndarray
    p: np.ndarray
    p_holm: np.ndarray
    method: np.ndarray
    overall: dict

    def to_dict(self) -> dict:
        """JSON-ready: {"overall": {...}, "slices": {SLICE: {...}}}."""
        return {
            "overall": {k: to_json(v) for k, v in self.overall.items()},
            "slices": {
                f: {
                    "n": int(self.n[i]),
                    "a_only": int(self.a_only[i]),
                    "b_only": int(self.b_only[i]),
                    "statistic": to_json(self.statistic[i]),
                    "p": to_json(self.p[i]),
                    "p_holm": to_json(self.p_holm[i]),
                    "method": str(self.method[i]),
                }
                for i, f in enumerate(self.names)
            },
        }


def mcnemar(
    correct_a: np.ndarray,
    correct_b: np.ndarray,
    membership: np.ndarray,
    names: Sequence[str],
    exact_below: int = MCNEMAR_EXACT_BELOW,
) -> PairedTest:
    """Paired McNemar test per slice: do two models differ in accuracy on
    the images of the slice? See :func:`mcnemar_counts` for the test and
    :func:`holm` for the correction (over the slices that have images).

    Args:
        correct_a, correct_b: ``(n,)`` bool, the two models on the same
            images
        membership: ``(n, k)`` bool matrix, image x slice
        names: the ``k`` slice names
    """
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape:
        raise ValueError("the two models must be scored on the same images")
    factors = check_membership(a, membership, names)
    n = factors.sum(axis=0)
    a_only = factors[a & ~b].sum(axis=0)
    b_only = factors[b & ~a].sum(axis=0)
    stat, p, method = mcnemar_counts(a_only, b_only, exact_below)
    p = np.where(n > 0, p, np.nan)
    ta, tb = int((a & ~b).sum()), int((b & ~a).sum())
    ostat, op, omethod = mcnemar_counts(ta, tb, exact_below)
    overall = {
        "n": len(a), "a_only": ta, "b_only": tb,
        "statistic": float(ostat[0]), "p": float(op[0]),
        "method": str(omethod[0]),
    }
    return PairedTest(tuple(names), n, a_only, b_only, stat, p, holm(p), method, overall)


def alexander_govern(groups: dict) -> dict:
    """The Alexander-Govern test per slice (factor), as the paper uses it: do groups
    of models (e.g. model families) differ in mean error ratio on a factor?
    Each group's samples are its models' error ratios on that factor
    (``scipy.stats.alexandergovern``; the toolkit's ``model_comparison``).

    Args:
        groups: ``{group name: (models, 16) array of error ratios}``; at
            least two groups of at least two models each

    Returns:
        ``{"statistic": (16,) array, "p": (16,) array}``; NaN where a
        factor's error ratios are undefined or constant within a group
    """
    from scipy import stats

    arrays = [np.atleast_2d(np.asarray(g, dtype=np.float64)) for g in groups.values()]
    if len(arrays) < 2 or any(a.shape[0] < 2 for a in arrays):
        sizes = ", ".join(f"{k}: {a.shape[0]}" for k, a in zip(groups, arrays))
        raise ImageNetXError(
            "The Alexander-Govern test needs at least two groups of at least "
            f"two models each (got {sizes or 'none'})"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.alexandergovern(*arrays, axis=0)
    return {
        "statistic": np.asarray(res.statistic, dtype=np.float64),
        "p": np.asarray(res.pvalue, dtype=np.float64),
    }


def wilson_interval(successes: int, n: int, level: float = 0.95) -> tuple:
    """The Wilson score interval ``(low, high)`` of a proportion
    ``successes / n`` (``n`` > 0), as scipy's ``binomtest`` gives it."""
    from scipy.stats import binomtest  # lazy: start-up (the command line's parser imports metrics)

    ci = binomtest(int(successes), int(n)).proportion_ci(level, method="wilson")
    return ci.low, ci.high
