"""Calibration, each with its scheme named: the expected calibration error
overall and per slice (the toolkit's ``estimated_calibration_error``,
equal-width bins), with equal-width or equal-mass bins and the reliability
diagram's per-bin data (:func:`reliability_bins`), and Hendrycks' RMS
calibration error (:func:`rms_calibration_error`). Temperature scaling is
:mod:`imagenetx.metrics.temperature`."""

from dataclasses import dataclass

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


# -- binning schemes, reliability diagrams, RMS calibration error -------------

#: the binning schemes of :func:`reliability_bins`
BIN_SCHEMES = ("equal-width", "equal-mass")
#: Minderer et al. 2021 ("Revisiting the Calibration of Modern Neural
#: Networks"): 100 equal-mass bins (robustness_metrics'
#: ``projects/revisiting_calibration/plotting.py`` line 31-32)
EQUAL_MASS_BINS = 100
#: Hendrycks' RMS calibration error: bins of 100 images (``beta=100`` of
#: ``calib_err``, hendrycks/natural-adv-examples ``calibration_tools.py`` line 5)
RMS_BIN_SIZE = 100


@dataclass(frozen=True)
class ReliabilityBins:
    """Per-bin data of a reliability diagram.

    Attributes:
        scheme: ``"equal-width"`` or ``"equal-mass"``
        upper: ``(b,)`` each bin's upper edge
        confidence: ``(b,)`` mean confidence of its images (NaN: empty)
        accuracy: ``(b,)`` fraction right (NaN: empty)
        count: ``(b,)`` its images
    """

    scheme: str
    upper: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    count: np.ndarray

    @property
    def ece(self) -> float:
        """The image-weighted mean of ``|accuracy - confidence|`` over the
        bins (empty bins weigh nothing)."""
        full = self.count > 0
        gap = np.abs(self.accuracy[full] - self.confidence[full])
        return float(np.sum(gap * self.count[full]) / self.count.sum())

    def to_dict(self) -> dict:
        return {"scheme": self.scheme, "upper": self.upper.tolist(),
                "confidence": self.confidence.tolist(), "accuracy": self.accuracy.tolist(),
                "count": self.count.tolist(), "ece": self.ece}


def equal_mass_edges(confidence: np.ndarray, n_bins: int = EQUAL_MASS_BINS) -> np.ndarray:
    """The upper edges of ``n_bins`` equal-mass bins, as robustness_metrics
    draws them (``_get_adaptive_bins``, ``metrics/uncertainty.py`` lines
    1308-1334): the sorted confidences at ``round(linspace(0, n, n_bins,
    endpoint=False))``, the first dropped and 1 appended."""
    confidence = np.asarray(confidence, dtype=np.float64).reshape(-1)
    if confidence.size == 0:
        return np.linspace(0, 1, n_bins + 1)[1:]
    at = np.round(np.linspace(0, confidence.size, n_bins, endpoint=False)).astype(int)
    edges = np.sort(confidence)[np.minimum(at, confidence.size - 1)]
    return np.concatenate((edges[1:], [1.0]))


def reliability_bins(
    correct: np.ndarray,
    confidence: np.ndarray,
    n_bins: int = ECE_BINS,
    scheme: str = "equal-width",
) -> ReliabilityBins:
    """Bins the images by confidence; each bin's mean confidence, accuracy
    and count.

    - ``"equal-width"``: ``n_bins`` bins of [0, 1], ``(lo, hi]`` (a value
      on an inner edge goes to the lower bin; 0 to the first): Guo et al.
      2017 and :func:`calibration_error`.
    - ``"equal-mass"``: :func:`equal_mass_edges`, each image in the first
      bin whose upper edge exceeds it (``np.digitize``, robustness_metrics'
      ``_get_calibration_error``, ``metrics/uncertainty.py`` line 1546); as
      there, a confidence of exactly 1 lies past the last edge and makes an
      extra bin (``n_bins + 1`` rows, the last with upper edge ``inf``).
      Ties can leave bins unequal or empty.

    Args:
        correct: ``(n,)`` bool, the prediction right
        confidence: ``(n,)`` the predicted class's probability, in [0, 1]
        n_bins: 15 by default; Minderer et al. use 100 equal-mass bins
            (:data:`EQUAL_MASS_BINS`)
        scheme: one of :data:`BIN_SCHEMES`
    """
    correct = np.asarray(correct, dtype=np.float64).reshape(-1)
    confidence = np.asarray(confidence, dtype=np.float64).reshape(-1)
    if scheme == "equal-width":
        upper = np.linspace(0.0, 1.0, n_bins + 1)[1:]
        ids = np.searchsorted(upper[:-1], confidence)
    elif scheme == "equal-mass":
        upper = np.concatenate((equal_mass_edges(confidence, n_bins), [np.inf]))
        ids = np.digitize(confidence, upper[:-1])
    else:
        raise ValueError(f"Unknown binning scheme '{scheme}': use one of {', '.join(BIN_SCHEMES)}")
    size = upper.size
    count = np.bincount(ids, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = np.bincount(ids, weights=confidence, minlength=size) / count
        acc = np.bincount(ids, weights=correct, minlength=size) / count
    return ReliabilityBins(scheme, upper, conf, acc, count)


def expected_calibration_error(
    correct: np.ndarray,
    confidence: np.ndarray,
    n_bins: int = ECE_BINS,
    scheme: str = "equal-width",
) -> float:
    """Expected calibration error over :func:`reliability_bins`: the
    image-weighted mean ``|accuracy - mean confidence|``. Equal-width with
    15 bins is :func:`calibration_error`; Minderer et al.'s ECE is
    ``n_bins=100, scheme="equal-mass"`` (robustness_metrics' ``gce`` with
    ``binning_scheme='adaptive', norm='l1', num_bins=100``)."""
    return reliability_bins(correct, confidence, n_bins, scheme).ece


def rms_calibration_error(
    correct: np.ndarray, confidence: np.ndarray, bin_size: int = RMS_BIN_SIZE
) -> float:
    """The RMS calibration error as Hendrycks computes it (``calib_err``
    with ``p='2'``, hendrycks/natural-adv-examples ``calibration_tools.py``
    lines 5-35).

    The images sorted by confidence (numpy's default ``argsort``) are cut
    into ``n // bin_size`` bins of ``bin_size``, the last one taking the
    remainder; the error is ``sqrt(sum_b n_b / n * (conf_b - acc_b)^2)``
    over the bins **but the last**: upstream's loop stops one short
    (``range(len(bins) - 1)``, line 15), so the most confident bin never
    counts and the weights sum to less than 1. Kept, so the numbers match
    the ImageNet-A/-O papers' code.

    Raises:
        ValueError: fewer than ``bin_size`` images (upstream fails on an
            empty bin list)
    """
    confidence = np.asarray(confidence).reshape(-1)
    n = confidence.size
    if n < bin_size:
        raise ValueError(f"{n} images: the RMS calibration error needs at least {bin_size}")
    # in the given dtypes, as upstream: the order of ties decides their bins
    order = np.argsort(confidence)
    conf, right = confidence[order], np.asarray(correct).reshape(-1)[order]
    total = 0.0
    for lo in np.arange(n // bin_size - 1) * bin_size:  # not the last bin, as upstream
        gap = np.abs(np.nanmean(conf[lo:lo + bin_size]) - np.nanmean(right[lo:lo + bin_size]))
        total += bin_size / n * np.square(gap)
    return float(np.sqrt(total))
