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
from typing import List, Optional, Sequence

import torch

from imagenetx.errors import ImageNetXError
from imagenetx.probes.base import CLEAN, Probe
from imagenetx.probes.spectral_levels import (  # noqa: F401 (re-exported)
    CUTOFFS, HIGH, LOW, check_cutoff, level_key, parse_level)


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
