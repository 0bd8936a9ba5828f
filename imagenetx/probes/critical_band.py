"""Critical band masking probe (Subramanian et al., NeurIPS 2023).

Each image becomes what Gavrikov & Keuper's ``code/eval_criticalband.py``
(``solomon_filter``, taken from ajaysub110/critical-band-masking
``methods.py``) feeds the model, computed on the batch on the model's
device:

1. grayscale as PIL's ``convert("L")`` computes it (8-bit, ITU-R 601-2);
2. contrast 0.2 around 0.449: ``(g - mean(g)) * 0.2 + 0.449``;
3. white Gaussian noise of SD ``sd`` filtered to one octave band by a
   Laplacian pyramid (pyrtools' ``LaplacianPyramid``: binom5 filter,
   reflect1 edges; 7 scales for 224 pixels): band ``b`` keeps only pyramid
   level ``6 - b`` (``recon_pyr(levels=6 - b)``), so band 0 is the lowpass
   residual and band 6 the finest level; the filtered noise is rescaled to
   the RMS of the finest level's reconstruction, as the original does;
4. added, and pixels pushed out of [0, 1] treated as the original treats
   them: one below 0 is set to 0.1 (the image pixel is moved to
   ``0.1 - noise``), one above 1 to 0.9; if that would push the image pixel
   out of range instead, the noise pixel is redrawn from ``N(0, sd)`` until
   the sum is in range;
5. replicated to 3 channels.

The pyramid is linear and separable, so a band is a difference of two
maps ``U D X D'^T U'^T``, ``D`` the per-axis matrix of pyrtools' chain of
``corrDn`` (binom5, reflect1, step 2) and ``U`` of its ``upConv`` chain:
built once per size (``tests/test_critical_band.py`` checks the result
against pyrtools to 1e-12), applied as batched matmuls on the device.

Noise is reproducible: an image's white noise is drawn on the images'
device from its own ``torch.Generator(device).manual_seed(seed)``, so a
seed gives the same noise in any batch and, scaled by ``sd``, at every
level (common random numbers across levels; the original draws fresh
noise each time). CPU and CUDA generators give different streams for the
same seed: a rerun on the same kind of device reproduces the noise.
"""

from functools import lru_cache
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.critical_band import N_BANDS, critical_band_levels, parse_level

CONTRAST = 0.2
IMAGENET_MEAN = 0.449
#: gap kept from 0 and 1 when a pixel would leave the range
EPSILON = 0.1
#: pyrtools' ``binom5``: binomial coefficients summing to sqrt(2)
_BINOM5 = np.array([1.0, 4.0, 6.0, 4.0, 1.0]) / 16.0 * np.sqrt(2.0)
_FILTER_SIZE = len(_BINOM5)


def _reflect1(i: int, n: int) -> int:
    """Index ``i`` mirrored about the edge pixels (-1 -> 1, n -> n - 2)."""
    while i < 0 or i >= n:
        i = -i if i < 0 else 2 * (n - 1) - i
    return i


def _down(n: int) -> np.ndarray:
    """pyrtools ``corrDn`` (binom5, reflect1, step 2) along one axis: ``(ceil(n/2), n)``."""
    m = (n + 1) // 2
    d = np.zeros((m, n))
    half = _FILTER_SIZE // 2
    for i in range(m):
        for k, w in enumerate(_BINOM5):
            d[i, _reflect1(2 * i + k - half, n)] += w
    return d


def _up(m: int, n: int) -> np.ndarray:
    """pyrtools ``upConv`` (binom5, reflect1, step 2) from ``m`` to ``n`` samples: ``(n, m)``.

    The zero-filled signal of length ``n`` is filtered with reflect1 edges.
    """
    u = np.zeros((n, m))
    half = _FILTER_SIZE // 2
    for i in range(n):
        for k, w in enumerate(_BINOM5):
            j = _reflect1(i + k - half, n)
            if j % 2 == 0:
                u[i, j // 2] += w
    return u


def pyramid_scales(h: int, w: int) -> int:
    """Number of scales pyrtools' ``LaplacianPyramid`` gives an ``h x w`` image."""
    height, size = 0, min(h, w)
    while size >= _FILTER_SIZE:
        height, size = height + 1, size // 2
    return height + 1


@lru_cache(maxsize=None)
def _factors(n: int, level: int) -> Tuple[np.ndarray, np.ndarray]:
    """``(D, U)``: ``D`` takes ``n`` samples down ``level`` times (pyrtools'
    ``corrDn`` chain), ``U`` back up (its ``upConv`` chain), float64."""
    sizes = [n]
    for _ in range(level):
        sizes.append((sizes[-1] + 1) // 2)
    d, u = np.eye(n), np.eye(n)
    for size in sizes[:-1]:
        d = _down(size) @ d
    for big, small in zip(sizes[:-1], sizes[1:]):
        u = u @ _up(small, big)
    return d, u


_DEVICE_CACHE: dict = {}


def _smooth(x: torch.Tensor, level: int) -> torch.Tensor:
    """Each ``(n, H, W)`` map taken down ``level`` pyramid levels and back up."""
    if level == 0:
        return x
    h, w = x.shape[-2:]
    key = (h, w, level, str(x.device), x.dtype)
    if key not in _DEVICE_CACHE:
        _DEVICE_CACHE[key] = tuple(torch.as_tensor(m, dtype=x.dtype, device=x.device)
                                   for m in _factors(h, level) + _factors(w, level))
    dr, ur, dc, uc = _DEVICE_CACHE[key]
    return ur @ (dr @ x @ dc.T) @ uc.T


def pyramid_band(x: torch.Tensor, level: int) -> torch.Tensor:
    """pyrtools ``LaplacianPyramid(x).recon_pyr(levels=level)`` of each ``(n, H, W)`` map.

    The pyramid is linear and separable: level ``k`` reconstructs as
    ``S_k(x) - S_{k+1}(x)``, with ``S_k`` down ``k`` levels and back up
    (the lowpass residual, the last level, is ``S_k(x)`` alone).
    """
    h, w = x.shape[-2:]
    scales = pyramid_scales(h, w)
    if not 0 <= level < scales:
        raise ImageNetXError(f"Critical band: a {h}x{w} image has pyramid levels "
                             f"0..{scales - 1}, not {level}.")
    out = _smooth(x, level)
    if level < scales - 1:
        out = out - _smooth(x, level + 1)
    return out


def _rms(x: torch.Tensor) -> torch.Tensor:
    return torch.sqrt(torch.mean(x * x, dim=(-2, -1), keepdim=True))


def band_noise(white: torch.Tensor, band: int) -> torch.Tensor:
    """White noise ``(n, H, W)`` confined to octave band ``band`` (0 = lowest).

    As ``add_noise_at_sf``: pyramid level ``6 - band``, rescaled to the RMS
    of level 0 (the finest band) of the same noise.
    """
    level = N_BANDS - (band + 1)
    recon = pyramid_band(white, level)
    first = recon if level == 0 else pyramid_band(white, 0)
    return recon * _rms(first) / _rms(recon)


def pil_gray(images: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """PIL ``convert("L")`` of ``(n, 3, H, W)`` images in [0, 1], as ``(n, H, W)`` in [0, 1].

    The images are taken to 8 bits first (as the original reads 8-bit
    images), then PIL's ``(19595 R + 38470 G + 7471 B + 2**15) >> 16``;
    every term stays below 2**24, so float32 computes it exactly.
    """
    q = torch.round(images.clamp(0, 1).to(torch.float32) * 255)
    lum = torch.floor((q[:, 0] * 19595 + q[:, 1] * 38470 + q[:, 2] * 7471 + 32768) / 65536)
    return lum.to(dtype) / 255.0


def low_contrast(gray: torch.Tensor) -> torch.Tensor:
    """``(g - mean(g)) * 0.2 + 0.449`` per image."""
    mean = gray.mean(dim=(-2, -1), keepdim=True)
    return (gray - mean) * CONTRAST + IMAGENET_MEAN


def generators(seeds: Sequence[int], device="cpu") -> List[torch.Generator]:
    """One generator per image on ``device``, seeded with its seed."""
    return [torch.Generator(device=device).manual_seed(int(s)) for s in seeds]


def white_noise(gens: Sequence[torch.Generator], h: int, w: int) -> torch.Tensor:
    """``(n, H, W)`` float32 standard normal noise, one generator per image, on their device."""
    return torch.stack([torch.randn((h, w), generator=g, device=g.device, dtype=torch.float32)
                        for g in gens])


def add_clipped(image: torch.Tensor, sf_noise: torch.Tensor, sd: float,
                gens: Sequence[torch.Generator]) -> torch.Tensor:
    """``image + sf_noise`` with out-of-range pixels handled as ``solomon_filter``.

    Every test in the original reads the pixel's values before any change,
    so its per-pixel loop is this elementwise rule.
    """
    noisy = image + sf_noise
    low, high = noisy < 0, noisy > 1
    if not bool((low | high).any()):
        return noisy
    newp = torch.where(low, EPSILON - sf_noise, 1 - EPSILON - sf_noise)
    other = (low & (newp > 1)) | (high & (newp < 0))
    image = torch.where((low | high) & ~other, newp, image)
    if bool(other.any()):
        # the original redraws such a noise pixel from N(0, sd) until it fits
        sf_noise = sf_noise.clone()
        for i in torch.nonzero(other.flatten(1).any(1)).flatten().tolist():
            idx = other[i].nonzero(as_tuple=True)
            base, value = image[i][idx], sf_noise[i][idx]
            bad = (value + base < 0) | (value + base > 1)
            while bool(bad.any()):
                draw = torch.randn(int(bad.sum()), generator=gens[i], device=gens[i].device,
                                   dtype=torch.float32).to(value.device, value.dtype) * sd
                value = value.masked_scatter(bad, draw)
                bad = (value + base < 0) | (value + base > 1)
            sf_noise[i][idx] = value
    return image + sf_noise


def critical_band_images(images: torch.Tensor, band: Optional[int], sd: float,
                         seeds: Sequence[int],
                         dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The masked grayscale images, ``(n, 3, H, W)`` in [0, 1].

    Args:
        images: ``(n, 3, H, W)`` in [0, 1], before normalization.
        band: 0..6, or ``None`` for clean (grayscale, low contrast, no noise).
        sd: noise SD (ignored for clean).
        seeds: one int per image.
        dtype: computation dtype (float64 for exact comparisons).
    """
    h, w = images.shape[-2:]
    scales = pyramid_scales(h, w)
    if scales < N_BANDS:
        raise ImageNetXError(f"Critical band: a {h}x{w} image gives a {scales}-level pyramid; "
                             f"the 7 octave bands need images of at least 160 pixels a side "
                             f"(the probe's 224 crop).")
    gray = low_contrast(pil_gray(images, dtype))
    if band is None:
        out = gray
    else:
        gens = generators(seeds, images.device)
        white = white_noise(gens, h, w).to(dtype) * sd
        out = add_clipped(gray, band_noise(white, band), sd, gens)
    return out.unsqueeze(1).expand(-1, 3, -1, -1).to(images.dtype).contiguous()


class CriticalBand:
    """Critical band masking as a probe: 29 levels, ``"clean"`` and ``"<band>:<sd>"``.

    Level keys: ``"clean"`` (grayscale, contrast 0.2, no noise) and
    ``"<band>:<sd>"`` with band 0..6 (centred at 1.75 * 2**band cycles per
    image, 0 the lowest) and the noise SD as ``f"{sd:g}"``: ``"0:0.02"`` ...
    ``"6:0.16"``. :func:`imagenetx.metrics.critical_band.fit_critical_band`
    turns accuracy per level into the channel.
    """

    name = "critical_band"

    def levels(self) -> List[str]:
        """``"clean"`` then 7 bands x SDs (0.02, 0.04, 0.08, 0.16), band-major."""
        return critical_band_levels()

    def apply(self, images: torch.Tensor, level: str, seeds: Sequence[int]) -> torch.Tensor:
        """The probe's images at ``level``: ``(n, 3, H, W)`` in [0, 1].

        Args:
            images: float ``(n, 3, H, W)`` in [0, 1] on the model's device,
                resized and cropped, before normalization.
            level: a key of :meth:`levels` (any positive SD is accepted).
            seeds: one int per image; the same seed gives the same noise.

        Raises:
            ImageNetXError: an unknown level, a band outside 0..6, an SD <= 0,
                images not ``(n, 3, H, W)``, or not one seed per image.
        """
        parsed = parse_level(level)
        if not isinstance(images, torch.Tensor) or images.dim() != 4 or images.shape[1] != 3:
            shape = tuple(images.shape) if isinstance(images, torch.Tensor) else type(images)
            raise ImageNetXError(f"Critical band: images must be a (n, 3, H, W) tensor, "
                                 f"not {shape}.")
        if len(seeds) != images.shape[0]:
            raise ImageNetXError(f"Critical band: {len(seeds)} seeds for {images.shape[0]} "
                                 f"images; pass one seed per image.")
        if parsed is None:
            return critical_band_images(images, None, 0.0, seeds)
        band, sd = parsed
        with torch.no_grad():
            return critical_band_images(images, band, sd, seeds)
