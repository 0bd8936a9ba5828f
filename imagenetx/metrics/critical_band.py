"""Critical band masking (Subramanian et al., NeurIPS 2023) on arrays.

The probe (:mod:`imagenetx.probes.critical_band`) shows a model grayscale,
low-contrast images with Gaussian noise confined to one of 7 octave bands
(band ``b`` centred at ``1.75 * 2**b`` cycles per image, b = 0..6, from the
lowest to the Nyquist frequency of a 224-pixel image) at noise SDs
{0.02, 0.04, 0.08, 0.16}, plus the same images without noise ("clean").
This module turns the top-1 accuracy of each (band, SD) into the model's
*channel*, as the authors' ``analysis/analysis.py``
(ajaysub110/critical-band-masking, commit a2b3d34) does it:

1. **Threshold per band** (``find_thresholds``): walking the SDs from the
   strongest (0.16) down to clean, the threshold index ``j`` is the number
   of levels passed before the first whose accuracy is *above* the
   criterion (their 50%); ``j`` is 4 when none is above it before clean
   (their loop ends at ``j = 4`` either way). As the SDs double, ``j`` is
   the band's noise sensitivity in log2 units: 0 = the model still
   recognizes through SD 0.16, 4 = SD 0.02 (or nothing at all) breaks it.
2. **Fit** (``fit_gaussian``): ``A * exp(-(x - mu)**2 / (2 * sigma**2))``
   over the band indices x = 0..6 by ``scipy.optimize.curve_fit`` from
   ``p0 = (1, 0, 1)`` with ``0 <= A <= 4`` (``|sigma|`` kept: the fit may
   return it negative; where SciPy's default evaluation budget runs out, as
   on a lone spike, the fit is rerun with a larger one instead of failing).
3. **Channel** (``channel_props``): bandwidth = FWHM =
   ``2 * sqrt(ln 4) * sigma`` octaves, centre frequency = ``1.75 * 2**mu``
   cycles/image, peak noise sensitivity = ``2**(A - 4)``.

Gavrikov & Keuper (CVPR 2024, ``code/eval_criticalband.py``) run it on the
1000-way ImageNet validation set, where few models reach 50% on these
images at all. Their ``benchmark.csv`` holds two variants: ``bw/cf/pns``
with the absolute criterion (accuracy > 50%) and ``*_norm``, which their
figures use. The normalization is not in their repository; we read it as
accuracy divided by clean accuracy (``normalize=True``, the default). The
table agrees: every published triple of both variants is exactly the fit
of an integer threshold vector, each model's ``*_norm`` vector is at most
its absolute one band by band (as dividing by a clean accuracy <= 1
implies), and the untrained ResNet-50, at chance everywhere, gets all
zeros normalized and all fours absolute (``tests/test_critical_band.py``).

When all 7 thresholds are equal the Gaussian is not identifiable (any
``mu`` with ``sigma`` -> infinity fits a flat line): ``curve_fit`` then
stops wherever its SciPy version stops (the published table holds
bandwidth 11295.35 / centre 4247.37 for every flat-at-4 model, which SciPy
1.17 does not reproduce). Such a fit is marked ``degenerate``, with NaN
centre frequency and bandwidth and the flat level's ``2**(c - 4)`` as
peak sensitivity.
"""

import math
import re
import warnings
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from scipy.optimize import OptimizeWarning, curve_fit

from imagenetx.errors import ImageNetXError

N_BANDS = 7
NOISE_SDS: Tuple[float, ...] = (0.02, 0.04, 0.08, 0.16)
CLEAN = "clean"
#: Subramanian et al.'s criterion: a level is recognized when accuracy is above it
CRITERION = 0.5
#: centre of band 0 in cycles per image; band b is centred at 1.75 * 2**b
BASE_FREQUENCY = 1.75
#: points of the fitted curve, as their ``fit_gaussian`` samples it
CURVE_POINTS = 60

_KEY = re.compile(r"^\s*(-?\d+)\s*:\s*([-+0-9.eE]+)\s*$")
_FORMAT = "'clean' or '<band>:<noise sd>' with band 0..6 and sd > 0, e.g. '3:0.08'"


def level_key(band: int, sd: float) -> str:
    """The level key of noise of SD ``sd`` in octave band ``band``: ``"3:0.08"``."""
    return f"{int(band)}:{float(sd):g}"


def critical_band_levels() -> List[str]:
    """``"clean"`` then the 28 noise levels, band-major: ``0:0.02 ... 6:0.16``."""
    return [CLEAN] + [level_key(b, sd) for b in range(N_BANDS) for sd in NOISE_SDS]


def parse_level(key: str) -> Optional[Tuple[int, float]]:
    """``(band, sd)`` of a level key, ``None`` for ``"clean"``.

    Raises:
        ImageNetXError: the key is not ``clean`` or ``<band>:<sd>``, the band
            is not 0..6, or the SD is not a positive number.
    """
    if not isinstance(key, str):
        raise ImageNetXError(f"Critical band level {key!r} is not a string: use {_FORMAT}.")
    if key.strip() == CLEAN:
        return None
    m = _KEY.match(key)
    if not m:
        raise ImageNetXError(f"Unknown critical band level {key!r}: use {_FORMAT}.")
    band = int(m.group(1))
    try:
        sd = float(m.group(2))
    except ValueError:
        raise ImageNetXError(f"Critical band level {key!r}: the noise SD {m.group(2)!r} "
                             f"is not a number; use {_FORMAT}.") from None
    if not 0 <= band < N_BANDS:
        raise ImageNetXError(f"Critical band level {key!r}: band {band} is out of range; "
                             f"bands are 0 (lowest frequency) to {N_BANDS - 1} (highest).")
    if not (sd > 0 and math.isfinite(sd)):
        raise ImageNetXError(f"Critical band level {key!r}: the noise SD must be a positive "
                             f"number, not {m.group(2)}.")
    return band, sd


def band_center_frequency(band: float) -> float:
    """Nominal centre of an octave band (or fractional band) in cycles/image."""
    return BASE_FREQUENCY * 2.0 ** band


@dataclass(frozen=True)
class CriticalBandFit:
    """A model's spatial-frequency channel from critical band masking.

    Attributes:
        center_frequency: ``1.75 * 2**mu`` cycles/image (NaN if degenerate).
        bandwidth_octaves: full width at half maximum, ``2 * sqrt(ln 4) * sigma``.
        peak_sensitivity: peak noise sensitivity ``2**(A - 4)``.
        amplitude, mu, sigma: the Gaussian over band indices.
        thresholds: threshold index (0..4) per band, the fitted data.
        curve_x, curve: the fitted curve at 60 points over bands 0..6.
        degenerate: all thresholds equal, so the Gaussian is not identifiable.
        normalized: the criterion applied to accuracy / clean accuracy.
        criterion: the accuracy (or fraction of clean) a band must exceed.
    """

    center_frequency: float
    bandwidth_octaves: float
    peak_sensitivity: float
    amplitude: float
    mu: float
    sigma: float
    thresholds: Tuple[int, ...]
    curve_x: Tuple[float, ...]
    curve: Tuple[float, ...]
    degenerate: bool
    normalized: bool = True
    criterion: float = CRITERION

    def to_dict(self) -> dict:
        def num(v):
            return None if isinstance(v, float) and not math.isfinite(v) else v
        return {
            "center_frequency": num(self.center_frequency),
            "bandwidth_octaves": num(self.bandwidth_octaves),
            "peak_sensitivity": num(self.peak_sensitivity),
            "amplitude": num(self.amplitude), "mu": num(self.mu), "sigma": num(self.sigma),
            "thresholds": list(self.thresholds), "degenerate": self.degenerate,
            "normalized": self.normalized, "criterion": self.criterion,
            "curve_x": list(self.curve_x), "curve": [num(v) for v in self.curve],
        }


def _gauss(x, a, mu, sigma):
    return a * np.exp(-(x - mu) ** 2 / (2.0 * sigma ** 2))


def band_thresholds(matrix: np.ndarray, criterion: float = CRITERION) -> np.ndarray:
    """Threshold index per band, as Subramanian et al.'s ``find_thresholds``.

    Args:
        matrix: ``(5, 7)`` accuracies, rows clean then SDs 0.02..0.16
            ascending, columns bands 0..6.
        criterion: a level counts as recognized when its accuracy is above it.

    Returns:
        ``(7,)`` ints in 0..4.
    """
    matrix = np.asarray(matrix, dtype=float)
    out = []
    for band in range(matrix.shape[1]):
        for j in range(matrix.shape[0]):
            if matrix[matrix.shape[0] - 1 - j, band] > criterion:
                break
        out.append(j)  # their loop leaves j = 4 when nothing breaks it, too
    return np.array(out, dtype=int)


def fit_thresholds(thresholds: Sequence[float], normalized: bool = True,
                   criterion: float = CRITERION) -> CriticalBandFit:
    """Gaussian fit of threshold indices over bands and the channel it gives.

    Args:
        thresholds: one value per band 0..6 (normally :func:`band_thresholds`).
        normalized, criterion: recorded on the result.
    """
    t = np.asarray(thresholds, dtype=float)
    if t.shape != (N_BANDS,) or not np.all(np.isfinite(t)):
        raise ImageNetXError(f"Critical band fit needs {N_BANDS} finite thresholds, "
                             f"one per band; got {list(thresholds)!r}.")
    x = np.arange(N_BANDS, dtype=float)
    curve_x = np.linspace(0, N_BANDS - 1, CURVE_POINTS)
    ints = tuple(int(v) if float(v).is_integer() else float(v) for v in t)
    if np.all(t == t[0]):
        a = float(min(max(t[0], 0.0), 4.0))
        return CriticalBandFit(math.nan, math.nan, 2.0 ** (a - 4), a, math.nan, math.nan,
                               ints, tuple(curve_x), tuple(np.full(CURVE_POINTS, a)),
                               True, normalized, criterion)
    fit = dict(p0=[1.0, 0.0, 1.0], bounds=((0, -np.inf, -np.inf), (4, np.inf, np.inf)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizeWarning)
        try:
            (a, mu, sigma), _ = curve_fit(_gauss, x, t, **fit)
        except RuntimeError:
            # a lone spike drives sigma towards 0 past SciPy's default
            # evaluation budget (their code stops there); allow more
            (a, mu, sigma), _ = curve_fit(_gauss, x, t, max_nfev=100_000, **fit)
    sigma = abs(sigma)  # the Gaussian is even in sigma; curve_fit may return it negative
    return CriticalBandFit(
        center_frequency=float(band_center_frequency(mu)),
        bandwidth_octaves=float(2 * np.sqrt(np.log(4)) * sigma),
        peak_sensitivity=float(2.0 ** (a - 4)),
        amplitude=float(a), mu=float(mu), sigma=float(sigma), thresholds=ints,
        curve_x=tuple(float(v) for v in curve_x),
        curve=tuple(float(v) for v in _gauss(curve_x, a, mu, sigma)),
        degenerate=False, normalized=normalized, criterion=criterion)


def accuracy_matrix(accuracies: Mapping[str, float],
                    levels: Optional[Sequence[str]] = None) -> np.ndarray:
    """``(5, 7)`` matrix (clean, SDs ascending x bands) from ``{level key: accuracy}``.

    Args:
        accuracies: accuracy in [0, 1] per level key (as the probe names them).
        levels: the keys to read (default: all 29); every one of the 28
            standard noise levels and ``clean`` must be among them.

    Raises:
        ImageNetXError: a key is malformed, a standard level is missing, or
            an accuracy is not in [0, 1].
    """
    keys = list(levels) if levels is not None else list(accuracies)
    by_level: Dict[Optional[Tuple[int, float]], float] = {}
    for key in keys:
        parsed = parse_level(key)
        if key not in accuracies:
            raise ImageNetXError(f"Critical band: no accuracy for level {key!r}; "
                                 f"run the probe at every level first.")
        acc = float(accuracies[key])
        if not 0.0 <= acc <= 1.0:
            raise ImageNetXError(f"Critical band: accuracy {acc!r} at level {key!r} is "
                                 f"not a fraction in [0, 1].")
        by_level[None if parsed is None else (parsed[0], round(parsed[1], 12))] = acc
    wanted = [None] + [(b, round(sd, 12)) for b in range(N_BANDS) for sd in NOISE_SDS]
    missing = [CLEAN if w is None else level_key(*w) for w in wanted if w not in by_level]
    if missing:
        raise ImageNetXError(f"Critical band: levels {missing} are missing; the fit needs "
                             f"'clean' and all {N_BANDS} bands x SDs {list(NOISE_SDS)}.")
    matrix = np.empty((len(NOISE_SDS) + 1, N_BANDS))
    matrix[0, :] = by_level[None]
    for b in range(N_BANDS):
        for i, sd in enumerate(NOISE_SDS):
            matrix[i + 1, b] = by_level[(b, round(sd, 12))]
    return matrix


def fit_critical_band(accuracies: Mapping[str, float],
                      levels: Optional[Sequence[str]] = None,
                      normalize: bool = True,
                      criterion: float = CRITERION) -> CriticalBandFit:
    """A model's critical band from its accuracy at each probe level.

    Args:
        accuracies: ``{level key: top-1 accuracy in [0, 1]}``; keys as
            :func:`critical_band_levels` names them (``"clean"``, ``"3:0.08"``).
        levels: the keys to use (default: those of ``accuracies``).
        normalize: compare accuracy / clean accuracy with the criterion
            (Gavrikov's ``*_norm`` columns); False compares accuracy itself
            (Subramanian et al.'s 16-class setting).
        criterion: recognized means above this (0.5).

    Raises:
        ImageNetXError: see :func:`accuracy_matrix`; or ``normalize`` with a
            clean accuracy of 0.
    """
    matrix = accuracy_matrix(accuracies, levels)
    if normalize:
        if matrix[0, 0] <= 0:
            raise ImageNetXError("Critical band: clean accuracy is 0, so accuracy as a "
                                 "fraction of clean is undefined; use normalize=False.")
        matrix = matrix / matrix[0, 0]
    return fit_thresholds(band_thresholds(matrix, criterion), normalize, criterion)
