"""The detector protocol, a run's outputs that detectors read, the fitted
statistics' storage, and the registry of detectors.

A detector is any object with

-   ``name``: ``"msp"``, ``"energy"``, ``"vim"``, ...
-   ``needs``: the fields of :class:`Outputs` its ``score`` reads
    (``("logits",)``, or ``("features", "weight", "bias")``)
-   ``fit_on``: what its ``fit`` must be given: ``""`` (nothing to fit),
    ``"id_train"`` (ID training images: ReAct, ViM, KNN) or ``"id_val"``
    (held-out ID images with labels: temperature scaling); never OOD or
    test images
-   ``fit(outputs)``: the statistics of those ID images (a
    :class:`FitStats`), or None
-   ``score(outputs, stats=None)``: ``(n,)`` float64 scores, higher = more
    in-distribution

:class:`Detector` is the base class with those defaults; a detector need
not inherit from it. :mod:`imagenetx.metrics.ood` scores the scores.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.registry import Registry


@dataclass(frozen=True)
class Outputs:
    """What a model run gives a detector, as numpy arrays.

    Attributes:
        logits: ``(n, C)`` the head's outputs
        features: ``(n, D)`` the penultimate features (the head's input)
        weight: ``(C, D)`` the head's weight ``W``
        bias: ``(C,)`` the head's bias ``b`` (``logits = features @ W.T + b``)
        labels: ``(n,)`` ID class indices (only to fit a temperature)
    """

    logits: Optional[np.ndarray] = None
    features: Optional[np.ndarray] = None
    weight: Optional[np.ndarray] = None
    bias: Optional[np.ndarray] = None
    labels: Optional[np.ndarray] = None

    def require(self, names, detector: str) -> None:
        """Raises ImageNetXError naming the first of ``names`` missing."""
        for name in names:
            if getattr(self, name) is None:
                raise ImageNetXError(
                    f"The OOD detector '{detector}' needs the run's {name}: give "
                    f"`{name}`")


@dataclass(frozen=True)
class FitStats:
    """Base of a detector's fitted statistics: plain numbers in and out.

    Subclasses are frozen dataclasses of floats, ints, strings and numpy
    arrays; :meth:`to_dict` turns the arrays into nested lists (JSON),
    :meth:`from_dict` back.
    """

    def to_dict(self) -> Dict[str, Any]:
        """``{field: value}`` with arrays as nested lists of floats."""
        return {f.name: (v.tolist() if isinstance(v, np.ndarray) else v)
                for f in dataclasses.fields(self) for v in [getattr(self, f.name)]}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]):
        """The statistics :meth:`to_dict` wrote (lists become float64
        arrays).

        Raises:
            ImageNetXError: for a missing or unknown field
        """
        names = [f.name for f in dataclasses.fields(cls)]
        if set(data) != set(names):
            raise ImageNetXError(
                f"{cls.__name__} takes the fields {', '.join(names)}; got "
                f"{', '.join(sorted(data)) or 'none'}")
        return cls(**{k: (np.asarray(v, dtype=np.float64) if isinstance(v, list) else v)
                      for k, v in data.items()})


class Detector:
    """Base class of detectors (see the module docstring for the protocol)."""

    name: str = ""
    needs: Tuple[str, ...] = ("logits",)
    fit_on: str = ""

    def fit(self, outputs: Outputs) -> Optional[FitStats]:
        """Nothing to fit."""
        return None

    def score(self, outputs: Outputs, stats: Optional[FitStats] = None) -> np.ndarray:
        raise NotImplementedError

    def _stats(self, stats, kind: type):
        if not isinstance(stats, kind):
            raise ImageNetXError(
                f"The OOD detector '{self.name}' scores with its fitted statistics: "
                f"call fit on ID {'training' if self.fit_on == 'id_train' else 'validation'} "
                "outputs and pass `stats`")
        return stats


def _check_name(name: str) -> None:
    if not name or not name.replace("_", "").isalnum():
        raise ImageNetXError(
            f"Cannot register OOD detector '{name}': name it with letters, digits and "
            "underscores")


#: detector name -> its class, or ``"module:Class"`` of it (imported on first
#: use); the class is built with keyword options
DETECTORS: Registry = Registry("OOD detector", check_name=_check_name)
DETECTORS.register("msp", "imagenetx.ood.logits:MSP")
DETECTORS.register("max_logit", "imagenetx.ood.logits:MaxLogit")
DETECTORS.register("energy", "imagenetx.ood.logits:Energy")
DETECTORS.register("gen", "imagenetx.ood.logits:GEN")
DETECTORS.register("temp_scaling", "imagenetx.ood.logits:TemperatureScaledMSP")
DETECTORS.register("react", "imagenetx.ood.features:ReAct")
DETECTORS.register("ash_s", "imagenetx.ood.features:ASHS")
DETECTORS.register("vim", "imagenetx.ood.features:ViM")
DETECTORS.register("knn", "imagenetx.ood.features:KNN")


def register_detector(name: str, detector=None):
    """Adds a detector: ``detector`` is its class (built with the options
    :func:`get_detector` is given) or ``"module:Class"``, imported on first
    use. Without ``detector``, a decorator of the class."""
    return DETECTORS.register(name, detector)


def detector_names() -> List[str]:
    """The names :func:`get_detector` knows."""
    return DETECTORS.names()


def get_detector(name: str, **options):
    """Builds the detector called ``name`` with its options
    (``get_detector("energy", temperature=2.0)``).

    Raises:
        ImageNetXError: for an unknown detector, or one whose module is not
            installed in this version
    """
    key = (name or "").replace("-", "_")
    if key not in DETECTORS:
        raise DETECTORS.unknown(name)
    return DETECTORS.get(key)(**options)


def as_matrix(values, name: str, columns: str) -> np.ndarray:
    """``values`` as a 2-D float64 ``(images, columns)`` array.

    Raises:
        ImageNetXError: for another shape, naming ``name`` and ``columns``
    """
    m = np.asarray(values, dtype=np.float64)
    if m.ndim != 2 or not m.shape[1]:
        raise ImageNetXError(f"`{name}` has shape {m.shape}: give (images, {columns})")
    return m
