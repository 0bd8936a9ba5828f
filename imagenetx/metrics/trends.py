"""Trends across many models: a factor's accuracy against overall accuracy
(the ImageNet-X paper's Figure 4), and a measure against augmentation
strength (its Figure 6).

-   :func:`fit_cloud`: a straight line in logit space, as the ImageNet
    testbed (Taori et al., 2020) fits accuracy against accuracy, with the
    residual spread; a new model's residual in units of that spread says
    how unusual it is for its accuracy. Accuracies over ``n`` images enter
    as empirical logits, ``(acc * n + 0.5) / (n + 1)``, so that 0% or 100%
    on a 60-image factor stays finite and does not dominate the spread
-   :func:`strength_trend`: a monotone trend of a per-run measure against
    strength, Spearman's rank correlation (or the OLS slope's t-test), its
    p-value, and the fitted change over the strength range
"""

from dataclasses import dataclass

import numpy as np
from scipy import stats

#: accuracies are clipped to [EPS, 1 - EPS] before the logit
EPS = 1e-6

#: trend tests :func:`strength_trend` offers
TREND_METHODS = ("spearman", "ols")


def logit(p) -> np.ndarray:
    """``log(p / (1 - p))``, with ``p`` clipped away from 0 and 1."""
    p = np.clip(np.asarray(p, dtype=np.float64), EPS, 1 - EPS)
    return np.log(p) - np.log1p(-p)


def empirical_logit(p, n=None) -> np.ndarray:
    """:func:`logit` of ``(p * n + 0.5) / (n + 1)`` (plain logit when ``n``
    is None): the continuity-corrected logit of a share of ``n`` images."""
    p = np.asarray(p, dtype=np.float64)
    if n is not None:
        n = np.asarray(n, dtype=np.float64)
        p = (p * n + 0.5) / (n + 1)
    return logit(p)


def expit(z) -> np.ndarray:
    """The inverse of :func:`logit`."""
    return 1.0 / (1.0 + np.exp(-np.asarray(z, dtype=np.float64)))


@dataclass(frozen=True)
class CloudFit:
    """``logit(y) = intercept + slope * logit(x)`` over reference points.

    Attributes:
        slope, intercept: the least-squares line in logit space
        spread: the residuals' standard deviation (``n - 2`` degrees of
            freedom), in logit units
        n: points fitted
        spearman: Spearman's rank correlation of x and y
    """

    slope: float
    intercept: float
    spread: float
    n: int
    spearman: float

    def expected(self, x) -> np.ndarray:
        """The trend's y (an accuracy) at overall accuracy ``x``."""
        return expit(self.intercept + self.slope * logit(x))

    def residual_z(self, x, y, n_x=None, n_y=None) -> np.ndarray:
        """How far ``y`` lies from the trend at ``x``, in units of
        :attr:`spread` (positive: above the trend); ``n_x``, ``n_y``: the
        images behind them, as in :func:`fit_cloud`."""
        resid = empirical_logit(y, n_y) - (
            self.intercept + self.slope * empirical_logit(x, n_x))
        with np.errstate(invalid="ignore", divide="ignore"):
            return resid / self.spread


def fit_cloud(x, y, n_x=None, n_y=None) -> CloudFit:
    """Fits the logit-space line of ``y`` on ``x`` over their finite pairs.

    Args:
        x: ``(m,)`` overall accuracies
        y: ``(m,)`` accuracies on one factor (NaN where undefined)
        n_x, n_y (None): the images behind ``x`` and ``y`` (scalars or
            ``(m,)``), for :func:`empirical_logit`; None: plain logits
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    n = int(ok.sum())
    if n < 3:
        return CloudFit(np.nan, np.nan, np.nan, n, np.nan)
    lx = empirical_logit(x[ok], None if n_x is None else np.broadcast_to(n_x, x.shape)[ok])
    ly = empirical_logit(y[ok], None if n_y is None else np.broadcast_to(n_y, y.shape)[ok])
    slope, intercept = np.polyfit(lx, ly, 1)
    resid = ly - (intercept + slope * lx)
    spread = float(np.sqrt((resid ** 2).sum() / (n - 2)))
    rho = stats.spearmanr(x[ok], y[ok]).statistic
    return CloudFit(float(slope), float(intercept), spread, n, float(rho))


@dataclass(frozen=True)
class StrengthTrend:
    """A measure's trend against strength over independent runs.

    Attributes:
        method: ``spearman`` or ``ols``
        statistic: Spearman's rho, or the OLS slope's t statistic
        pvalue: two-sided p-value of no trend
        slope: the OLS slope (measure per unit of strength)
        change: ``slope`` x the strength range: the fitted change from the
            weakest to the strongest setting
        n: runs used
    """

    method: str
    statistic: float
    pvalue: float
    slope: float
    change: float
    n: int


def strength_trend(strength, values, method: str = "spearman") -> StrengthTrend:
    """Tests a monotone trend of ``values`` in ``strength`` (finite pairs).

    Args:
        strength: ``(runs,)``
        values: ``(runs,)`` the measure of each run
        method ("spearman"): ``spearman`` (rank correlation, no shape
            assumed) or ``ols`` (t-test of the least-squares slope)
    """
    if method not in TREND_METHODS:
        raise ValueError(f"method must be one of {TREND_METHODS}")
    s = np.asarray(strength, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(s) & np.isfinite(v)
    s, v = s[ok], v[ok]
    n = len(s)
    if n < 3 or np.ptp(s) == 0 or np.ptp(v) == 0:
        return StrengthTrend(method, np.nan, np.nan, np.nan, np.nan, n)
    fit = stats.linregress(s, v)
    if method == "spearman":
        r = stats.spearmanr(s, v)
        statistic, pvalue = float(r.statistic), float(r.pvalue)
    else:
        statistic = float(fit.slope / fit.stderr)
        pvalue = float(fit.pvalue)
    return StrengthTrend(method, statistic, pvalue, float(fit.slope),
                         float(fit.slope * np.ptp(s)), n)
