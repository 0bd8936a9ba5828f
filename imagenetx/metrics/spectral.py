"""Spectral bias from band-pass accuracies (Gavrikov & Keuper, CVPR 2024).

Accuracy under each filter is taken as a fraction of clean accuracy;
LPP is the mean low-pass fraction over the cutoffs 0.1-0.5, HPP the mean
high-pass fraction over the same cutoffs (``c``, the filter itself removing
the square of ``1 - c``), and spectral bias = HPP / (LPP + HPP), as the
authors' ``plots.ipynb`` computes them from ``benchmark.csv``'s
``metric/bandpass/{LFC,HFC}/<c>`` columns.
"""

from dataclasses import dataclass
from typing import Mapping

import numpy as np

#: the cutoffs LPP and HPP average over
PROFICIENCY_CUTOFFS = (0.1, 0.2, 0.3, 0.4, 0.5)


@dataclass(frozen=True)
class SpectralBias:
    """LPP, HPP and spectral bias (NaN where undefined)."""

    lpp: float
    hpp: float
    bias: float

    def to_dict(self) -> dict:
        def clean(x):
            return None if not np.isfinite(x) else float(x)

        return {"lpp": clean(self.lpp), "hpp": clean(self.hpp),
                "spectral_bias": clean(self.bias)}


def fractions_of_clean(accuracies: Mapping[float, float], clean: float) -> dict:
    """``{cutoff: accuracy / clean}`` (NaN when clean accuracy is 0)."""
    return {c: (a / clean if clean else float("nan")) for c, a in accuracies.items()}


def spectral_bias(low: Mapping[float, float], high: Mapping[float, float]) -> SpectralBias:
    """LPP, HPP and spectral bias from fractions of clean accuracy.

    Args:
        low: ``{cutoff: low-pass accuracy / clean accuracy}``
        high: ``{cutoff: high-pass accuracy / clean accuracy}``, keyed by
            the cutoff ``c`` the high-pass filter is called with

    Returns:
        a :class:`SpectralBias`; NaN where a cutoff of
        :data:`PROFICIENCY_CUTOFFS` is missing
    """
    def mean(fractions):
        values = [_lookup(fractions, c) for c in PROFICIENCY_CUTOFFS]
        return float(np.mean(values)) if all(v is not None for v in values) else float("nan")

    lpp, hpp = mean(low), mean(high)
    total = lpp + hpp
    bias = hpp / total if np.isfinite(total) and total > 0 else float("nan")
    return SpectralBias(lpp, hpp, bias)


def _lookup(fractions: Mapping[float, float], cutoff: float):
    for c, v in fractions.items():
        if abs(float(c) - cutoff) < 1e-9:
            return None if v is None or not np.isfinite(v) else float(v)
    return None
