"""Effective robustness: a line on logit axes, its bootstrap band, and a
model's distance above it (Taori et al., "Measuring Robustness to Natural
Distribution Shifts in Image Classification", NeurIPS 2020).

The arithmetic of the ImageNet testbed (modestyachts/imagenet-testbed at
``0170eec``), ``plotting/plotter.py``: accuracies in percent go to the logit
axis (``transform_acc``, lines 91-99), a least-squares line is fitted there
(``scipy.stats.linregress``, line 156), its 95 % band is the percentile
bootstrap of 1,000 resampled fits with the seed 720257663 (lines 53-88 and
172), and a model's effective robustness is its shift accuracy minus the
line's, back in percent (``paper_eff_robust_corruptions.py`` lines 41-46).
Which models and which columns make a line is the testbed's data, in
:mod:`imagenetx.protocols.effective_robustness`.
"""

from dataclasses import dataclass
from typing import Tuple, Union

import numpy as np
import scipy.stats

ArrayLike = Union[float, np.ndarray, list]

#: the testbed's resamples (``--num_bootstrap_samples`` default of every
#: ``plotting/paper_*.py`` script, e.g. ``paper_nat_shift_imagenetv2.py`` line 36)
BOOTSTRAP_RESAMPLES = 1000
#: the testbed's bootstrap seed (``plotting/plotter.py`` line 172)
BOOTSTRAP_SEED = 720257663
#: the level of the band and of the coefficients' intervals, in percent
#: (``plotting/plotter.py`` line 173)
BAND_LEVEL = 95
#: the points of the testbed's x grid (``x_plotting_resolution``,
#: ``plotting/plotter.py`` line 21)
GRID_POINTS = 200


def logit(top1: ArrayLike) -> np.ndarray:
    """Top-1 in percent -> the logit axis, ``log(p / (1 - p))`` with
    ``p = top1 / 100`` (``plotting/plotter.py`` lines 98-99)."""
    p = np.asarray(top1, dtype=np.float64) / 100.0
    with np.errstate(divide="ignore"):
        return np.log(np.divide(p, 1.0 - p))


def inverse_logit(z: ArrayLike) -> np.ndarray:
    """The logit axis -> top-1 in percent, ``100 e^z / (1 + e^z)``
    (``plotting/plotter.py`` lines 109-110)."""
    z = np.asarray(z, dtype=np.float64)
    return (np.exp(z) / (1 + np.exp(z))) * 100


@dataclass(frozen=True)
class LogitLine:
    """A least-squares line of shift top-1 on clean top-1, both on the
    logit axis.

    Attributes:
        slope, intercept: on the logit axes
        r: the correlation of the fitted points
        n: the models fitted
    """

    slope: float
    intercept: float
    r: float
    n: int

    def predict(self, clean_top1: ArrayLike) -> np.ndarray:
        """The line's shift top-1 (percent) at a clean top-1 (percent)."""
        return inverse_logit(logit(clean_top1) * self.slope + self.intercept)


def fit_logit_line(clean_top1: ArrayLike, shift_top1: ArrayLike) -> LogitLine:
    """The least-squares line through ``(logit(clean), logit(shift))``
    (``scipy.stats.linregress``, ``plotting/plotter.py`` lines 151-158).

    Args:
        clean_top1, shift_top1: ``(n,)`` top-1 in percent, strictly
            between 0 and 100 (the logit of 0 or 100 is infinite)
    """
    x, y = logit(clean_top1), logit(shift_top1)
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("a top-1 of 0 or 100 % has no logit: leave that model out of the fit")
    fit = scipy.stats.linregress(x, y)
    return LogitLine(float(fit.slope), float(fit.intercept), float(fit.rvalue), int(x.size))


@dataclass(frozen=True)
class Band:
    """The percentile-bootstrap band of a logit line, over a grid of clean
    accuracies.

    Attributes:
        grid: ``(g,)`` clean accuracies on the logit axis
        lower, upper: ``(g,)`` the band's shift accuracies on the logit axis
        intercept_interval, slope_interval: the coefficients' intervals
        resamples, seed, level: how it was drawn
    """

    grid: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    intercept_interval: Tuple[float, float]
    slope_interval: Tuple[float, float]
    resamples: int = BOOTSTRAP_RESAMPLES
    seed: int = BOOTSTRAP_SEED
    level: float = BAND_LEVEL

    def percent(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(grid, lower, upper)`` in top-1 percent."""
        return inverse_logit(self.grid), inverse_logit(self.lower), inverse_logit(self.upper)


def bootstrap_band(
    clean_top1: ArrayLike,
    shift_top1: ArrayLike,
    grid: ArrayLike,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = BAND_LEVEL,
) -> Band:
    """The testbed's bootstrap band of the logit line
    (``run_bootstrap_linreg`` and ``get_bootstrap_cis``,
    ``plotting/plotter.py`` lines 53-88).

    Each resample draws ``n`` models with replacement
    (``RandomState(seed).choice(n, n)``, in the order given: the order is
    part of the draw), fits ``[1, x] -> y`` by ``lstsq`` and evaluates the
    fit on ``grid``. The band at each grid point is the ``(100 - level) / 2``
    percentile of those values taken at the value below (numpy's
    ``method="lower"``) and the ``100 - (100 - level) / 2`` percentile at the
    value above (``"higher"``); the coefficients' intervals alike.

    Args:
        clean_top1, shift_top1: ``(n,)`` the fitted models' top-1, percent
        grid: ``(g,)`` clean accuracies **on the logit axis** (see
            :func:`logit`)
        resamples (1000), seed (720257663), level (95): the testbed's
    """
    xs, ys = logit(clean_top1), logit(shift_top1)
    grid = np.asarray(grid, dtype=np.float64)
    rng = np.random.RandomState(seed)
    n = xs.shape[0]
    grid_padded = np.stack([np.ones(grid.shape[0]), grid], axis=1)
    coeffs = np.empty((resamples, 2))
    values = np.empty((resamples, grid.shape[0]))
    for i in range(resamples):
        idx = rng.choice(n, n)
        design = np.stack([np.ones(n), xs[idx]], axis=1)
        coeffs[i] = np.linalg.lstsq(design, ys[idx], rcond=None)[0]
        values[i] = grid_padded @ coeffs[i]
    lo_q = (100.0 - level) / 2
    hi_q = 100.0 - lo_q
    intervals = [
        (float(np.percentile(coeffs[:, j], lo_q, method="lower")),
         float(np.percentile(coeffs[:, j], hi_q, method="higher")))
        for j in range(2)
    ]
    lower = np.percentile(values, lo_q, axis=0, method="lower")
    upper = np.percentile(values, hi_q, axis=0, method="higher")
    return Band(grid, lower, upper, intervals[0], intervals[1], resamples, seed, level)


def logit_grid(lo_top1: float, hi_top1: float, points: int = GRID_POINTS) -> np.ndarray:
    """``points`` clean accuracies evenly spaced on the logit axis from
    ``lo_top1`` to ``hi_top1`` percent (``plotting/plotter.py`` line 155)."""
    return np.linspace(logit(lo_top1), logit(hi_top1), points)


def effective_robustness_of(
    clean_top1: ArrayLike, shift_top1: ArrayLike, line: LogitLine
) -> np.ndarray:
    """Shift top-1 minus the line's at the same clean top-1, in points
    (``paper_eff_robust_corruptions.py`` lines 43-46): positive above the
    line."""
    return np.asarray(shift_top1, dtype=np.float64) - line.predict(clean_top1)
