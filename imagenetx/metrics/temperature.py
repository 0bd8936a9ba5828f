"""Temperature scaling (Guo et al., "On Calibration of Modern Neural
Networks", ICML 2017): one temperature ``T`` dividing every logit, fitted by
the negative log-likelihood on **held-out clean** logits and labels, then
applied unchanged to any split (a shifted one included: Ovadia et al. 2019,
Minderer et al. 2021 fit on clean data only).

The fit is exact: with ``b = 1 / T`` the NLL ``mean(logsumexp(b z) - b
z_y)`` is convex in ``b`` and its derivative ``mean(E_softmax(b z)[z] -
z_y)`` rises with ``b``, so its one zero is found by Brent's method to
``1e-12``. Hendrycks' ``tune_temp`` (hendrycks/natural-adv-examples
``calibration_tools.py`` lines 58-76) bisects the same derivative's sign on
``T`` in [0.2, 5] to 1e-4.
"""

from typing import Tuple

import numpy as np
import scipy.optimize
from scipy.special import logsumexp

#: rows of logits per chunk (a 1000-class chunk is 32 MB in float64)
CHUNK = 4096
#: the inverse temperatures searched (T from 1/1000 to 1000)
INVERSE_BOUNDS = (1e-3, 1e3)


def _nll_and_slope(logits: np.ndarray, labels: np.ndarray, b: float) -> Tuple[float, float]:
    """The mean NLL at inverse temperature ``b`` and its derivative in ``b``."""
    nll = slope = 0.0
    for lo in range(0, logits.shape[0], CHUNK):
        z = logits[lo:lo + CHUNK].astype(np.float64)
        zy = z[np.arange(z.shape[0]), labels[lo:lo + CHUNK]]
        lse = logsumexp(b * z, axis=1)
        p = np.exp(b * z - lse[:, None])
        nll += float(np.sum(lse - b * zy))
        slope += float(np.sum((p * z).sum(axis=1) - zy))
    n = logits.shape[0]
    return nll / n, slope / n


def nll(logits: np.ndarray, labels: np.ndarray, temperature: float = 1.0) -> float:
    """The mean negative log-likelihood of ``softmax(logits / T)``."""
    logits, labels = _checked(logits, labels)
    return _nll_and_slope(logits, labels, 1.0 / temperature)[0]


def _checked(logits, labels) -> Tuple[np.ndarray, np.ndarray]:
    logits = np.asarray(logits)
    labels = np.asarray(labels, dtype=np.int64).reshape(-1)
    if logits.ndim != 2 or logits.shape[0] != labels.shape[0] or logits.shape[0] == 0:
        raise ValueError(f"logits {logits.shape} and labels {labels.shape}: "
                         "want (n, classes) and (n,), n > 0")
    return logits, labels


def fit_temperature(clean_logits: np.ndarray, clean_labels: np.ndarray,
                    bounds: Tuple[float, float] = None) -> float:
    """The temperature minimising the NLL of held-out clean logits.

    Takes the clean split only, by design: a temperature fitted on a
    shifted test set would hide the miscalibration the shift causes.

    Args:
        clean_logits: ``(n, classes)`` a held-out clean split's logits
        clean_labels: ``(n,)`` their class indices
        bounds (None): the temperatures searched, ``(lowest, highest)``
            (None: those of :data:`INVERSE_BOUNDS`)

    Raises:
        ValueError: the NLL falls all the way to a bound (e.g. every image
            right by a margin: the best temperature is 0)
    """
    logits, labels = _checked(clean_logits, clean_labels)
    lo, hi = INVERSE_BOUNDS if bounds is None else (1.0 / bounds[1], 1.0 / bounds[0])
    slope_lo, slope_hi = (_nll_and_slope(logits, labels, b)[1] for b in (lo, hi))
    if slope_lo >= 0 or slope_hi <= 0:
        raise ValueError("the clean NLL has no minimum for T in "
                         f"[{1 / hi:g}, {1 / lo:g}]: cannot fit a temperature")
    b = scipy.optimize.brentq(lambda v: _nll_and_slope(logits, labels, v)[1], lo, hi,
                              xtol=1e-12, rtol=1e-12)
    return 1.0 / b


def scaled_probabilities(logits: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(logits / T)``, float64, row-wise."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    return np.exp(z - logsumexp(z, axis=1, keepdims=True))


def scaled_confidence(logits: np.ndarray, temperature: float) -> Tuple[np.ndarray, np.ndarray]:
    """``(predicted class, its probability)`` after dividing by ``T``; the
    prediction is the argmax, which ``T > 0`` leaves unchanged."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    predicted = z.argmax(axis=1)
    confidence = np.exp(z[np.arange(z.shape[0]), predicted] - logsumexp(z, axis=1))
    return predicted, confidence
