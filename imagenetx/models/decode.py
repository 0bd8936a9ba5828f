"""Image files -> the model's resized and center-cropped uint8 images.

Decoders (``--decoder``):

-   ``pil``: PIL decodes, and resizes with the model's own transform
-   ``torchvision``: libjpeg-turbo (``torchvision.io.decode_jpeg``) decodes
    JPEGs and the uint8 tensor is resized (antialiased, the model's
    interpolation) and center-cropped; PIL reads what it cannot (PNG, CMYK,
    incomplete files), so every bad file fails with PIL's own message
-   ``auto``: ``torchvision`` where the model's geometry is a plain resize and
    center crop (timm's and torchvision's defaults), else ``pil``; on a
    GPU, a share of each batch's JPEGs is also decoded there
    (:func:`decode_batch`) while the CPU workers decode the rest

The GPU path takes the raw bytes (workers read files, the main process
decodes a whole batch with one ``decode_jpeg(list, device=...)`` call) and
resizes and crops the whole batch with two batched matrix products
(:func:`resize_crop_batch`): an antialiased resize is separable and linear,
so each image's resize-and-crop is ``W_h @ image @ W_w^T`` with the same
filter weights PIL and PyTorch use. Both functions take a ``device``, so the
same code runs on CPU tensors in tests.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple, Union

import torch

from imagenetx.options import DECODERS

#: SOF markers libjpeg-turbo and nvJPEG decode: baseline, extended
#: sequential and progressive Huffman
_DECODABLE_SOF = (0xC0, 0xC1, 0xC2)
#: every SOF marker (C4 is DHT, C8 is reserved, CC is DAC)
_ALL_SOF = tuple(m for m in range(0xC0, 0xD0) if m not in (0xC4, 0xC8, 0xCC))

#: padded pixels (image x height x width) per batched resize product: a
#: batch with a few huge images is split so that padding stays bounded
PAD_BUDGET = 256 * 512 * 512

#: the half-width of each interpolation's filter
_SUPPORT = {"bilinear": 1.0, "bicubic": 2.0}


@dataclass(frozen=True)
class Geometry:
    """A resize then a center crop, as torchvision's ``Resize`` and
    ``CenterCrop`` do them.

    Attributes:
        size: the shorter side after resizing (an int), or ``(height,
            width)``
        interpolation: ``"bilinear"`` or ``"bicubic"`` (antialiased)
        crop: ``(height, width)`` of the center crop
    """

    size: Union[int, Tuple[int, int]]
    interpolation: str
    crop: Tuple[int, int]

    @classmethod
    def of(cls, transform) -> Optional["Geometry"]:
        """The geometry of a PIL transform that is ``Resize`` then
        ``CenterCrop`` (in a ``Compose``), or None for anything else
        (another interpolation, a ``max_size``, padding, other steps)."""
        import torchvision.transforms as T

        steps = list(getattr(transform, "transforms", [transform]))
        steps = [s for s in steps if not (isinstance(s, T.Compose) and not s.transforms)]
        if len(steps) == 1 and isinstance(steps[0], T.Compose):
            return cls.of(steps[0])
        if len(steps) != 2:
            return None
        resize, crop = steps
        if not (isinstance(resize, T.Resize) and isinstance(crop, T.CenterCrop)):
            return None
        interpolation = getattr(resize.interpolation, "value", resize.interpolation)
        if interpolation not in _SUPPORT or resize.max_size is not None:
            return None
        if resize.antialias is False:
            return None
        size = resize.size
        if isinstance(size, (list, tuple)):
            size = tuple(size) if len(size) == 2 else size[0]
        ch, cw = (crop.size * 2)[:2] if len(crop.size) == 1 else tuple(crop.size)
        smallest = min(size) if isinstance(size, tuple) else size
        if isinstance(size, tuple):
            if size[0] < ch or size[1] < cw:
                return None  # the crop would pad
        elif smallest < max(ch, cw):
            return None
        return cls(size=size, interpolation=interpolation, crop=(int(ch), int(cw)))

    def resized(self, height: int, width: int) -> Tuple[int, int]:
        """``(height, width)`` after the resize (torchvision's rule: the
        longer side is truncated)."""
        if isinstance(self.size, tuple):
            return self.size
        if width <= height:
            return int(self.size * height / width), self.size
        return self.size, int(self.size * width / height)

    def crop_origin(self, height: int, width: int) -> Tuple[int, int]:
        """``(top, left)`` of the center crop of a resized image (as
        ``CenterCrop``, which rounds half to even)."""
        return (int(round((height - self.crop[0]) / 2.0)),
                int(round((width - self.crop[1]) / 2.0)))

    def apply(self, image: torch.Tensor) -> torch.Tensor:
        """Resizes (antialiased) and crops one uint8 ``(3, H, W)`` image on
        the CPU."""
        import torchvision.transforms.v2.functional as F

        mode = F.InterpolationMode(self.interpolation)
        h, w = self.resized(*image.shape[-2:])
        resized = F.resize(image, [h, w], interpolation=mode, antialias=True)
        top, left = self.crop_origin(h, w)
        return resized[..., top:top + self.crop[0], left:left + self.crop[1]]


def resolve_decoder(decoder: str, geometry: Optional[Geometry]) -> str:
    """``pil`` or ``torchvision``: what ``decoder`` means for a model whose
    tensor geometry is ``geometry`` (None: not a plain resize and crop).

    Raises:
        ValueError: for an unknown decoder, or ``torchvision`` with a
            geometry tensors cannot reproduce
    """
    if decoder not in DECODERS:
        raise ValueError(f"Unknown decoder '{decoder}': use one of {', '.join(DECODERS)}")
    if decoder == "auto":
        return "pil" if geometry is None else "torchvision"
    if decoder == "torchvision" and geometry is None:
        raise ValueError(
            "this model's preprocessing is not a plain resize and center crop, "
            "so only PIL reproduces it: use `decoder=pil` (or auto)")
    return decoder


def jpeg_kind(data: bytes) -> Optional[Tuple[int, int]]:
    """``(SOF marker, components)`` of a complete JPEG, else None.

    A file that does not start with SOI and end with EOI (a PNG, an
    incomplete download) is None, so it goes to PIL, which raises what it
    raises today."""
    if len(data) < 4 or data[:2] != b"\xff\xd8" or data[-2:] != b"\xff\xd9":
        return None
    i, n = 2, len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:  # no length
            i += 2
            continue
        length = (data[i + 2] << 8) | data[i + 3]
        if marker in _ALL_SOF:
            return (marker, data[i + 9]) if i + 10 <= n else None
        if marker == 0xDA:  # scan data before a frame header
            return None
        i += 2 + length
    return None


def decodable(data: bytes) -> bool:
    """Whether libjpeg-turbo (or nvJPEG) decodes ``data`` as PIL would: a
    complete Huffman-coded JPEG with 1 (gray) or 3 (YCbCr/RGB) components.
    CMYK/YCCK, arithmetic coding, lossless and anything else go to PIL."""
    kind = jpeg_kind(data)
    return kind is not None and kind[0] in _DECODABLE_SOF and kind[1] in (1, 3)


def decode_jpeg(data: bytes) -> Optional[torch.Tensor]:
    """libjpeg-turbo's RGB ``(3, H, W)`` uint8 decode of ``data``, or None
    when it is not a :func:`decodable` JPEG or libjpeg-turbo complains
    (the caller falls back to PIL)."""
    from torchvision.io import ImageReadMode, decode_jpeg as tv_decode

    if not decodable(data):
        return None
    try:
        with _libjpeg_complaints_raise():
            return tv_decode(_as_tensor(data), mode=ImageReadMode.RGB)
    except (RuntimeError, UserWarning):
        return None


@contextmanager
def _libjpeg_complaints_raise():
    """libjpeg-turbo's warnings ("Corrupt JPEG data") raise, so the image
    goes to PIL, which decides as it does today; torchvision's own
    deprecation notice (0.29+) does not."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def _as_tensor(data: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


class CropReader:
    """Path -> the model's uint8 ``(3, h, w)`` crop, in a DataLoader worker.

    Args:
        pil_geometry: the model's PIL transform (resize and crop)
        geometry: the same as a :class:`Geometry`, for the ``torchvision``
            decoder
        decoder: ``"pil"`` or ``"torchvision"`` (resolved)
    """

    def __init__(self, pil_geometry: Callable, geometry: Optional[Geometry],
                 decoder: str):
        self.pil_geometry = pil_geometry
        self.geometry = geometry
        self.decoder = decoder

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def __call__(self, path: str, data: Optional[bytes] = None) -> torch.Tensor:
        """Decodes ``path`` (or its already read ``data``); raises what
        PIL raises for a file nobody can read."""
        if self.decoder == "torchvision":
            image = decode_jpeg(self.read(path) if data is None else data)
            if image is not None:
                return self.geometry.apply(image)
        return self.pil(path)

    def pil(self, path: str) -> torch.Tensor:
        """PIL's decode, RGB conversion (gray, CMYK, palette) and the
        model's PIL transform."""
        import numpy as np
        from PIL import Image

        with Image.open(path) as img:
            cropped = self.pil_geometry(img.convert("RGB"))
        return torch.from_numpy(np.asarray(cropped, dtype=np.uint8).copy()).permute(2, 0, 1)


def decode_batch(datas: Sequence[torch.Tensor], geometry: Geometry,
                 device: Union[str, torch.device]) -> Tuple[Optional[torch.Tensor], List[int]]:
    """Decodes JPEGs on ``device`` in one batched call and resizes and crops
    them there (:func:`resize_crop_batch`).

    Args:
        datas: each image's encoded bytes, as 1-D uint8 CPU tensors
        geometry: the model's resize and crop
        device: where to decode (``"cuda"``: nvJPEG; ``"cpu"``:
            libjpeg-turbo, the same code path under test)

    Returns:
        ``(crops, refused)``: uint8 ``(n - len(refused), 3, h, w)`` on
        ``device`` in the order of ``datas`` without the refused (None
        when all are), and the positions the device could not decode (the
        caller decodes them on the CPU)
    """
    from torchvision.io import ImageReadMode, decode_jpeg as tv_decode

    if not datas:
        return None, []
    device = torch.device(device)
    try:
        with _libjpeg_complaints_raise():
            images = tv_decode(list(datas), mode=ImageReadMode.RGB, device=device)
        kept = list(range(len(datas)))
    except (RuntimeError, UserWarning):
        # one bad image fails the batched call: find it, one by one
        images, kept = [], []
        for k, data in enumerate(datas):
            try:
                with _libjpeg_complaints_raise():
                    images.append(tv_decode(data, mode=ImageReadMode.RGB, device=device))
                kept.append(k)
            except (RuntimeError, UserWarning):
                pass
    refused = sorted(set(range(len(datas))) - set(kept))
    if not images:
        return None, refused
    return resize_crop_batch(images, geometry), refused


def resize_crop_batch(images: Sequence[torch.Tensor], geometry: Geometry) -> torch.Tensor:
    """Resizes (antialiased, as PIL and ``antialias=True``) and center-crops
    uint8 ``(3, H_k, W_k)`` images of any sizes on their device, batched.

    Images are padded to a common size, in groups that keep the padding
    within :data:`PAD_BUDGET`, and each group is two batched matrix
    products with per-image filter weights; rounded to uint8 like the
    per-image resize (within 1 of it).

    Returns:
        uint8 ``(n, 3, h, w)``, in the order of ``images``
    """
    device = images[0].device
    ch, cw = geometry.crop
    out = torch.empty((len(images), 3, ch, cw), dtype=torch.uint8, device=device)
    for group in _groups([tuple(im.shape[-2:]) for im in images]):
        members = [images[k] for k in group]
        heights = [im.shape[-2] for im in members]
        widths = [im.shape[-1] for im in members]
        shapes = [geometry.resized(h, w) for h, w in zip(heights, widths)]
        origins = [geometry.crop_origin(h, w) for h, w in shapes]
        span_h, span_w = max(heights), max(widths)
        w_h = _shared_weights(heights, [s[0] for s in shapes], [o[0] for o in origins],
                              ch, span_h, geometry.interpolation, device)
        w_w = _shared_weights(widths, [s[1] for s in shapes], [o[1] for o in origins],
                              cw, span_w, geometry.interpolation, device)
        padded = _padded(members, span_h, span_w).float()
        # (m, 3, H, W) @ (m, 1, W, cw) -> (m, 3, H, cw); (m, 1, ch, H) @ that;
        # the horizontal pass first and rounded to 8 bits, as PIL and
        # PyTorch's uint8 path do (bicubic overshoots, and is clipped there)
        rows = torch.matmul(padded, w_w.transpose(1, 2).unsqueeze(1))
        rows = rows.round_().clamp_(0, 255)
        crops = torch.matmul(w_h.unsqueeze(1), rows)
        index = torch.as_tensor(group, device=device)
        out[index] = crops.round_().clamp_(0, 255).to(torch.uint8)
    return out


def _groups(shapes: List[Tuple[int, int]]) -> List[List[int]]:
    """Positions grouped by area so that each group's padded size
    (count x tallest x widest) stays within :data:`PAD_BUDGET`; one group
    for a batch of ImageNet-sized images."""
    order = sorted(range(len(shapes)), key=lambda k: shapes[k][0] * shapes[k][1])
    groups, current, tall, wide = [], [], 0, 0
    for k in order:
        h, w = shapes[k]
        t, v = max(tall, h), max(wide, w)
        if current and (len(current) + 1) * t * v > PAD_BUDGET:
            groups.append(current)
            current, t, v = [], h, w
        current.append(k)
        tall, wide = t, v
    if current:
        groups.append(current)
    return groups


def _padded(images: List[torch.Tensor], height: int, width: int) -> torch.Tensor:
    """``(m, 3, height, width)``, zero-padded at the bottom and right."""
    try:
        with warnings.catch_warnings():  # "nested tensors are a prototype"
            warnings.simplefilter("ignore", UserWarning)
            nested = torch.nested.nested_tensor(list(images))
        return nested.to_padded_tensor(0, (len(images), 3, height, width))
    except (RuntimeError, NotImplementedError, TypeError):
        out = images[0].new_zeros((len(images), 3, height, width))
        for k, im in enumerate(images):
            out[k, :, : im.shape[-2], : im.shape[-1]] = im
        return out


def _shared_weights(in_sizes, out_sizes, starts, length, span, interpolation, device):
    """:func:`filter_weights` computed once per distinct axis (a batch of
    photos has a few dozen distinct sizes), gathered per image."""
    axes = list(zip(in_sizes, out_sizes, starts))
    distinct = list(dict.fromkeys(axes))
    index = {axis: k for k, axis in enumerate(distinct)}
    weights = filter_weights(*zip(*distinct), length, span, interpolation, device)
    return weights[torch.as_tensor([index[a] for a in axes], device=device)]


def filter_weights(in_sizes: Sequence[int], out_sizes: Sequence[int],
                   starts: Sequence[int], length: int, span: int,
                   interpolation: str, device) -> torch.Tensor:
    """The antialiased resampling weights along one axis, per image:
    ``(m, length, span)`` mapping an input row of ``in_sizes[k]`` pixels
    (zero-padded to ``span``) to the output pixels ``starts[k]`` to
    ``starts[k] + length`` of a resize to ``out_sizes[k]``.

    The same filter, window and normalization as PIL's resampling and
    PyTorch's ``interpolate(antialias=True)`` (bicubic with a = -0.5).
    """
    f64 = dict(dtype=torch.float64, device=device)
    n_in = torch.as_tensor(list(in_sizes), **f64)[:, None, None]
    n_out = torch.as_tensor(list(out_sizes), **f64)[:, None, None]
    first = torch.as_tensor(list(starts), **f64)[:, None, None]
    scale = n_in / n_out
    unit = _SUPPORT[interpolation]
    support = torch.where(scale >= 1, unit * scale, torch.full_like(scale, unit))
    invscale = torch.where(scale >= 1, 1 / scale, torch.ones_like(scale))
    i = first + torch.arange(length, **f64)[None, :, None]
    center = scale * (i + 0.5)
    lo = (center - support + 0.5).trunc().clamp(min=0)
    hi = torch.minimum((center + support + 0.5).trunc(), n_in)
    j = torch.arange(span, **f64)[None, None, :]
    x = ((j - center + 0.5) * invscale).abs()
    if interpolation == "bilinear":
        w = (1 - x).clamp(min=0)
    else:
        a = -0.5
        w = torch.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                        torch.where(x < 2, (((x - 5) * x + 8) * x - 4) * a,
                                    torch.zeros_like(x)))
    w = w * ((j >= lo) & (j < hi))
    return (w / w.sum(-1, keepdim=True)).float()
