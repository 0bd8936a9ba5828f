"""Band-pass filtered images, as Gavrikov & Keuper's ``eval_spectral.py``.

Per channel ``fftshift(fft2)``; the low-pass filter at cutoff ``c`` keeps
the centre square ``[cy-ry:cy+ry, cx-rx:cx+rx]`` with ``ry = int(c*cy)``,
``rx = int(c*cx)`` (``cy, cx = H//2, W//2``) and zeroes the rest; the
high-pass filter at ``c`` uses ``c' = 1 - c`` and zeroes that square; then
``ifft2(ifftshift)``, the real part, clipped to ``[0, 1]``. It runs with
``torch.fft`` on the whole batch on the model's device.

Levels: ``clean``, ``low:<c>`` and ``high:<c>`` for the 11 cutoffs of
:data:`CUTOFFS`.
"""

import functools
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch

from imagenetx.errors import ImageNetXError
from imagenetx.probes.base import CLEAN, Probe

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


def bandpass(images: torch.Tensor, cutoff: float, lowpass: bool = True) -> torch.Tensor:
    """Gavrikov's band-pass filter on a batch ``(..., H, W)`` in ``[0, 1]``.

    Args:
        images: float images, any leading dimensions
        cutoff: ``c`` in (0, 1)
        lowpass (True): keep the centre square (low frequencies), else
            remove the square of ``1 - c`` (keep the high frequencies)
    """
    check_cutoff(cutoff)
    h, w = images.shape[-2:]
    spectrum = torch.fft.fft2(images)
    # masking the shifted spectrum = masking the spectrum with the mask
    # shifted back: two fewer copies of the complex batch
    spectrum.mul_(_mask(h, w, cutoff, lowpass, str(images.device)))
    return torch.fft.ifft2(spectrum).real.clamp_(0, 1)


@functools.lru_cache(maxsize=64)
def _mask(h: int, w: int, cutoff: float, lowpass: bool, device: str) -> torch.Tensor:
    """The filter's mask in unshifted (``fft2``) frequency order."""
    if not lowpass:
        cutoff = 1 - cutoff
    cy, cx = h // 2, w // 2
    ry, rx = int(cutoff * cy), int(cutoff * cx)
    mask = torch.full((h, w), not lowpass, dtype=torch.bool)
    mask[cy - ry:cy + ry, cx - rx:cx + rx] = lowpass
    return torch.fft.ifftshift(mask, dim=(-2, -1)).to(device)


class Spectral(Probe):
    """Low- and high-pass filtered images at Gavrikov's cutoffs (or
    ``cutoffs``), plus the clean image."""

    name = "spectral"

    def __init__(self, cutoffs: Optional[Sequence[float]] = None):
        self.cutoffs = tuple(CUTOFFS if cutoffs is None else cutoffs)
        if not self.cutoffs:
            raise ImageNetXError("Pass at least one spectral cutoff")
        for c in self.cutoffs:
            check_cutoff(float(c))

    def levels(self) -> List[str]:
        return ([CLEAN] + [level_key(LOW, c) for c in self.cutoffs]
                + [level_key(HIGH, c) for c in self.cutoffs])

    def apply(self, images: torch.Tensor, level: str,
              seeds: Sequence[int] = ()) -> torch.Tensor:
        if level == CLEAN:
            return images
        kind, cutoff = parse_level(level)
        return bandpass(images, cutoff, lowpass=kind == LOW)
