"""Detectors that read a run's logits alone: MSP, MaxLogit, Energy, GEN and
temperature-scaled MSP (with the temperature fitted on ID validation images).

Each score is higher for more in-distribution images; the formulas and their
sources are in each function's docstring (OpenOOD: Jingkang50/OpenOOD at
3c35632, ``openood/postprocessors/``).
"""

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.metrics import temperature as temperature_scaling
from imagenetx.ood.base import Detector, FitStats, Outputs, as_matrix

#: the range :func:`fit_temperature` searches
TEMPERATURE_BOUNDS = (0.01, 100.0)


def as_logits(logits, name: str = "logits") -> np.ndarray:
    """``logits`` as a 2-D float64 ``(images, classes)`` array (:func:`as_matrix`)."""
    return as_matrix(logits, name, "classes")


def logsumexp(z: np.ndarray) -> np.ndarray:
    """``log sum_c exp z_c`` per row, computed from the row's maximum."""
    top = z.max(axis=1)
    return top + np.log(np.exp(z - top[:, None]).sum(axis=1))


def softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax."""
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _positive(value: float, name: str) -> float:
    if not value > 0:
        raise ImageNetXError(f"`{name}` is {value}: use a positive number")
    return float(value)


def msp(logits, temperature: float = 1.0) -> np.ndarray:
    """Maximum softmax probability ``max_c softmax(z / T)_c`` (Hendrycks &
    Gimpel 2017; OpenOOD base_postprocessor.py:21-22; with ``T`` fitted,
    temp_scaling_postprocessor.py:75-77)."""
    z = as_logits(logits) / _positive(temperature, "temperature")
    # max softmax = 1 / sum_c exp(z_c - max z)
    return 1.0 / np.exp(z - z.max(axis=1, keepdims=True)).sum(axis=1)


def max_logit(logits) -> np.ndarray:
    """``max_c z_c`` (Hendrycks et al. 2022; OpenOOD
    maxlogit_postprocessor.py:19)."""
    return as_logits(logits).max(axis=1)


def energy(logits, temperature: float = 1.0) -> np.ndarray:
    """The negative free energy ``T * logsumexp(z / T)`` (Liu et al. 2020;
    OpenOOD ebo_postprocessor.py:21-22)."""
    temperature = _positive(temperature, "temperature")
    z = as_logits(logits)
    if temperature == 1.0:  # one pass less over the logits, the same numbers
        return logsumexp(z)
    return temperature * logsumexp(z / temperature)


def gen(logits, gamma: float = 0.1, m: int = 100) -> np.ndarray:
    """Generalized entropy over the ``m`` largest softmax probabilities,
    negated: ``-sum_{top m} p^gamma (1 - p)^gamma`` (Liu et al. 2023, GEN;
    OpenOOD gen_postprocessor.py:32-38; all classes where ``m`` exceeds
    them)."""
    if int(m) < 1:
        raise ImageNetXError(f"`m` is {m}: GEN needs at least the top probability")
    p = np.sort(softmax(as_logits(logits)), axis=1)[:, -int(m):]
    return -np.sum(p ** gamma * (1 - p) ** gamma, axis=1)


@dataclass(frozen=True)
class TemperatureStats(FitStats):
    """The temperature fitted on ID validation images.

    Attributes:
        temperature: ``T`` minimising the NLL of ``softmax(z / T)``
        nll: that NLL (mean over the images)
        nll_before: the NLL at ``T = 1``
    """

    temperature: float
    nll: float
    nll_before: float


def fit_temperature(logits, labels,
                    bounds: Tuple[float, float] = TEMPERATURE_BOUNDS) -> TemperatureStats:
    """The temperature ``T`` that minimises the negative log-likelihood of
    ``softmax(z / T)`` on held-out **ID validation** images (Guo et al.
    2017; OpenOOD temp_scaling_postprocessor.py:20-65 fits it with L-BFGS on
    ``id_loader_dict['val']``). Fitting on OOD or test images would tune the
    detector to what it is scored on: this function takes ID class labels,
    which OOD images do not have, and refuses a label outside ``[0, C)``.

    The NLL is convex in ``1 / T``; its minimum is found exactly as the root
    of the derivative (:func:`imagenetx.metrics.temperature.fit_temperature`,
    the calibration's fit).

    Args:
        logits: ``(n, C)`` logits of ID validation images
        labels: ``(n,)`` their class indices
        bounds ((0.01, 100)): the temperatures searched

    Raises:
        ImageNetXError: for labels that are not ID class indices (OpenOOD
            marks OOD images -1), a length mismatch, or a minimum outside
            ``bounds`` (e.g. every image classified right: the NLL falls
            as ``T`` shrinks)
    """
    z = as_logits(logits)
    y = np.asarray(labels).ravel()
    if not len(z):
        raise ImageNetXError("No ID validation images: `logits` is empty")
    if len(y) != len(z):
        raise ImageNetXError(
            f"`labels` has {len(y)} entries for {len(z)} rows of `logits`: give one ID "
            "class per image")
    if not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= z.shape[1]:
        raise ImageNetXError(
            f"`labels` must be ID class indices in [0, {z.shape[1]}): a temperature is fitted "
            "on ID validation images, never on OOD (label -1) or test images")
    try:
        t = float(temperature_scaling.fit_temperature(z, y, bounds))
    except ValueError:
        raise ImageNetXError(
            f"No temperature in {bounds} minimises the NLL of these ID validation logits "
            "(are they all classified right?): widen `bounds`") from None
    return TemperatureStats(temperature=t, nll=temperature_scaling.nll(z, y, t),
                            nll_before=temperature_scaling.nll(z, y, 1.0))


class MSP(Detector):
    """Maximum softmax probability (:func:`msp`)."""

    name = "msp"

    def score(self, outputs: Outputs, stats: Optional[FitStats] = None) -> np.ndarray:
        outputs.require(self.needs, self.name)
        return msp(outputs.logits)


class MaxLogit(Detector):
    """Maximum logit (:func:`max_logit`)."""

    name = "max_logit"

    def score(self, outputs: Outputs, stats: Optional[FitStats] = None) -> np.ndarray:
        outputs.require(self.needs, self.name)
        return max_logit(outputs.logits)


class Energy(Detector):
    """Negative free energy at ``temperature`` (1; :func:`energy`)."""

    name = "energy"

    def __init__(self, temperature: float = 1.0):
        self.temperature = float(temperature)

    def score(self, outputs: Outputs, stats: Optional[FitStats] = None) -> np.ndarray:
        outputs.require(self.needs, self.name)
        return energy(outputs.logits, self.temperature)


class GEN(Detector):
    """Generalized entropy with ``gamma`` (0.1) over the top ``m`` (100)
    probabilities (:func:`gen`)."""

    name = "gen"

    def __init__(self, gamma: float = 0.1, m: int = 100):
        self.gamma = float(gamma)
        self.m = int(m)

    def score(self, outputs: Outputs, stats: Optional[FitStats] = None) -> np.ndarray:
        outputs.require(self.needs, self.name)
        return gen(outputs.logits, self.gamma, self.m)


class TemperatureScaledMSP(Detector):
    """MSP of ``z / T``, ``T`` fitted on ID validation logits and labels
    (:func:`fit_temperature`)."""

    name = "temp_scaling"
    fit_on = "id_val"

    def fit(self, outputs: Outputs) -> TemperatureStats:
        outputs.require(("logits", "labels"), self.name)
        return fit_temperature(outputs.logits, outputs.labels)

    def score(self, outputs: Outputs, stats: Optional[FitStats] = None) -> np.ndarray:
        outputs.require(self.needs, self.name)
        return msp(outputs.logits, self._stats(stats, TemperatureStats).temperature)
