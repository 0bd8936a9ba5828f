"""Expected calibration error, overall and per slice (the toolkit's
``estimated_calibration_error``)."""

import numpy as np

#: equal-width confidence bins of the expected calibration error
ECE_BINS = 15


def calibration_error(
    correct: np.ndarray, confidence: np.ndarray, n_bins: int = ECE_BINS
) -> float:
    """Expected calibration error: the toolkit's
    ``estimated_calibration_error``.

    Confidences fall into ``n_bins`` equal-width bins of [0, 1] (a value on
    an inner edge goes to the lower bin); the ECE is the image-weighted mean
    over non-empty bins of ``|accuracy - mean confidence|``.
    """
    return float(
        slice_calibration_errors(
            correct, confidence, np.ones((len(correct), 1), bool), n_bins
        )[0]
    )


def slice_calibration_errors(
    correct: np.ndarray,
    confidence: np.ndarray,
    factors: np.ndarray,
    n_bins: int = ECE_BINS,
) -> np.ndarray:
    """Expected calibration error (see :func:`calibration_error`) over the
    images of each slice; NaN where a slice has no image.

    Args:
        correct: ``(n,)`` bool
        confidence: ``(n,)`` confidence of the predicted class, in [0, 1]
        factors: ``(n, m)`` bool matrix, image x slice
        n_bins (15): equal-width bins

    Returns:
        a ``(m,)`` float array
    """
    correct = np.asarray(correct, dtype=np.float64)
    confidence = np.asarray(confidence, dtype=np.float64)
    factors = np.asarray(factors, dtype=bool)
    m = factors.shape[1]
    bins = np.linspace(0.0, 1.0, n_bins + 1)
    binids = np.searchsorted(bins[1:-1], confidence)
    rows, cols = np.nonzero(factors)
    key = cols * n_bins + binids[rows]
    size = m * n_bins
    total = np.bincount(key, minlength=size).reshape(m, n_bins)
    conf = np.bincount(key, weights=confidence[rows], minlength=size).reshape(m, n_bins)
    right = np.bincount(key, weights=correct[rows], minlength=size).reshape(m, n_bins)
    n = total.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.abs(right / total - conf / total) * (total / n[:, None])
    ece = np.where(total > 0, gap, 0.0).sum(axis=1)
    return np.where(n > 0, ece, np.nan)
