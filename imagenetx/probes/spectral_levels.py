"""The spectral probe's level names, read without torch (the analysis and
the panel parse them; :mod:`imagenetx.probes.spectral` filters the images)."""

from typing import Tuple

import numpy as np

from imagenetx.errors import ImageNetXError

#: Gavrikov's cutoffs 0.01, 0.1, 0.2, ..., 0.9, 0.99, with the float values
#: his ``np.arange(0.1, 0.99, 0.1)`` makes (0.30000000000000004, ...): on
#: sizes other than 224, ``int(c * cx)`` can differ for 0.3 and 0.7 otherwise
CUTOFFS: Tuple[float, ...] = (0.01, *(float(c) for c in np.arange(0.1, 0.99, 0.1)), 0.99)
LOW, HIGH = "low", "high"


def level_key(kind: str, cutoff: float) -> str:
    """``"low:0.1"``, ``"high:0.99"``."""
    return f"{kind}:{cutoff:g}"


def parse_level(level: str) -> Tuple[str, float]:
    """``"low:0.1"`` -> ``("low", 0.1)``.

    Raises:
        ImageNetXError: for another form, a kind other than low/high, or a
            cutoff outside (0, 1)
    """
    kind, sep, value = level.partition(":")
    try:
        cutoff = float(value)
    except ValueError:
        cutoff = None
    if not sep or kind not in (LOW, HIGH) or cutoff is None:
        raise ImageNetXError(
            f"Unknown spectral level '{level}': write low:C or high:C with a "
            "cutoff C in (0, 1), e.g. low:0.1")
    check_cutoff(cutoff)
    return kind, _canonical(cutoff)


def _canonical(cutoff: float) -> float:
    """The value of :data:`CUTOFFS` that prints as ``cutoff``, else itself."""
    for c in CUTOFFS:
        if abs(c - cutoff) < 1e-9:
            return c
    return cutoff


def check_cutoff(cutoff: float) -> None:
    """Raises :class:`ImageNetXError` unless ``0 < cutoff < 1``."""
    if not 0 < cutoff < 1:
        raise ImageNetXError(
            f"Spectral cutoff {cutoff:g} is outside (0, 1): pass cutoffs "
            "strictly between 0 and 1, e.g. 0.1")
