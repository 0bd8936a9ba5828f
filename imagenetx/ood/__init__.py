"""Out-of-distribution detectors: score functions of a model run's outputs
(logits; penultimate features and the head's ``W, b``), higher = more
in-distribution, in numpy, and their registry (:func:`register_detector`).

-   :mod:`~imagenetx.ood.base`: :class:`Outputs`, :class:`Detector`,
    :class:`FitStats` (fitted statistics as plain numbers) and the registry
-   :mod:`~imagenetx.ood.logits`: MSP, MaxLogit, Energy, GEN,
    temperature-scaled MSP
-   :mod:`~imagenetx.ood.features`: ReAct, ASH-S, ViM, KNN

:mod:`imagenetx.metrics.ood` scores the scores (AUROC, FPR@95, AUPR).
"""

from imagenetx.ood.base import (
    DETECTORS,
    Detector,
    FitStats,
    Outputs,
    detector_names,
    get_detector,
    register_detector,
)

__all__ = ["DETECTORS", "Detector", "FitStats", "Outputs", "detector_names", "get_detector",
           "register_detector"]
