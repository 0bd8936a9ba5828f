"""How images become model inputs: a geometry (resize, crop) on PIL images,
then ``[0, 1]`` scaling and a per-channel mean / std.

Every source builds its :class:`Preprocessing` from the model's own
configuration: timm's ``resolve_data_config``, a torchvision weights
entry's ``transforms()``, open_clip's ``preprocess`` transform, a Hugging
Face image processor. The pipeline reproduces the geometry on uint8
tensors where it can (:mod:`imagenetx.models.decode`) and normalizes on the
model's device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass
class Preprocessing:
    """How images become model inputs.

    Attributes:
        geometry: PIL image -> resized and cropped PIL image
        mean: the per-channel mean, in ``[0, 1]`` units
        std: the per-channel standard deviation, in ``[0, 1]`` units
        input_size: ``(channels, height, width)`` of the model input
    """

    geometry: Callable
    mean: tuple
    std: tuple
    input_size: tuple

    def transform(self, normalize: bool = True) -> Callable:
        """PIL image -> normalized float tensor, or, with ``normalize=False``,
        a uint8 tensor for :meth:`normalizer` to finish on the device."""
        import torchvision.transforms as T

        if not normalize:
            return T.Compose([self.geometry, T.PILToTensor()])
        return T.Compose(
            [self.geometry, T.ToTensor(), T.Normalize(self.mean, self.std)]
        )

    def normalizer(self, device, scale: float = 255.0) -> Callable:
        """Returns a function that normalizes ``(N, C, H, W)`` batches on
        ``device``: uint8 batches (``scale=255``), the finishing step of
        ``transform(normalize=False)``, or ``[0, 1]`` floats (``scale=1``)."""
        import torch

        # made once: a tensor built per batch would sync the device
        mean = torch.tensor(self.mean, device=device).view(1, -1, 1, 1)
        std = torch.tensor(self.std, device=device).view(1, -1, 1, 1)
        # ToTensor's division, then Normalize's: bit for bit the references' inputs
        return lambda batch: (batch.float() / scale - mean) / std


def without_resize(prep: Preprocessing) -> Preprocessing:
    """The same preprocessing for images that are already the model's input
    size (ImageNet-C and -C-bar's 224 x 224 release images, fed as their
    authors' and Gavrikov's scripts feed them): a resize and center crop to
    the input size, which leaves such an image as it is (and keeps the fast
    decoder's plain resize + crop)."""
    import dataclasses

    import torchvision.transforms as T

    _, h, w = prep.input_size
    steps = getattr(prep.geometry, "transforms", [prep.geometry])
    resize = next((s for s in steps if isinstance(s, T.Resize)), None)
    interpolation = resize.interpolation if resize is not None else T.InterpolationMode.BILINEAR
    geometry = T.Compose([T.Resize(min(h, w), interpolation, antialias=True),
                          T.CenterCrop((h, w))])
    return dataclasses.replace(prep, geometry=geometry)


class BorderCrop:
    """Cuts ``border`` pixels from every side of a PIL image, as
    ``PIL.ImageOps.crop(image, border)`` (the ImageNet testbed's ObjectNet
    ``crop_image``) does; a class, so that loader workers can pickle it."""

    def __init__(self, border: int):
        self.border = border

    def __call__(self, image):
        from PIL import ImageOps

        return ImageOps.crop(image, border=self.border)

    def __repr__(self):
        return f"BorderCrop(border={self.border})"


def with_border_crop(prep: Preprocessing, border: int) -> Preprocessing:
    """The same preprocessing after cutting a frame of ``border`` pixels
    off each image (ObjectNet's 2: its images carry a frame the model must
    not see); decoded on the CPU, with PIL, as a geometry the tensor path
    does not reproduce."""
    import dataclasses

    import torchvision.transforms as T

    return dataclasses.replace(prep, geometry=T.Compose([BorderCrop(border), prep.geometry]))


def from_timm_config(cfg: dict) -> Preprocessing:
    """The preprocessing of a timm data config (``resolve_data_config``)."""
    import torchvision.transforms as T
    from timm.data import create_transform

    # with use_prefetcher, timm's eval transform ends in a uint8 conversion
    # instead of ToTensor + Normalize; Preprocessing adds either
    full = create_transform(**cfg, use_prefetcher=True)
    steps = [
        t
        for t in full.transforms
        if not any(s in type(t).__name__ for s in ("ToTensor", "ToNumpy"))
    ]
    return Preprocessing(
        geometry=T.Compose(steps),
        mean=tuple(cfg["mean"]),
        std=tuple(cfg["std"]),
        input_size=tuple(cfg["input_size"]),
    )


def from_torchvision_weights(weights) -> Preprocessing:
    """The preprocessing of a torchvision weights entry (its
    ``transforms()``: resize, center crop, mean / std)."""
    import torchvision.transforms as T

    t = weights.transforms()
    crop = list(t.crop_size)
    return Preprocessing(
        geometry=T.Compose(
            [
                T.Resize(t.resize_size, t.interpolation, antialias=t.antialias),
                T.CenterCrop(crop),
            ]
        ),
        mean=tuple(t.mean),
        std=tuple(t.std),
        input_size=(3, crop[0], crop[-1]),
    )


def from_transform(transform, what: str) -> Preprocessing:
    """The preprocessing of a torchvision ``Compose`` that ends in
    ``ToTensor`` and ``Normalize`` (open_clip's ``preprocess``): the steps
    before ``ToTensor`` are the geometry (RGB conversions left out: the
    pipeline reads RGB), ``Normalize`` gives mean / std.

    Raises:
        ValueError: for a transform of another shape (``what`` names it)
    """
    import torchvision.transforms as T

    steps = list(getattr(transform, "transforms", [transform]))
    to_tensor = [k for k, s in enumerate(steps) if type(s).__name__.endswith("ToTensor")]
    norms = [s for s in steps if isinstance(s, T.Normalize)]
    if not to_tensor or not norms:
        raise ValueError(f"the preprocessing of {what} has no ToTensor and Normalize")
    geometry = [s for s in steps[: to_tensor[0]] if not _is_mode_conversion(s)]
    norm = norms[0]
    crops = [s for s in geometry if isinstance(s, T.CenterCrop)]
    size = crops[-1].size if crops else geometry[-1].size
    size = list(size) * 2 if isinstance(size, int) or len(size) == 1 else list(size)
    return Preprocessing(
        geometry=T.Compose(geometry),
        mean=tuple(float(m) for m in norm.mean),
        std=tuple(float(s) for s in norm.std),
        input_size=(3, int(size[0]), int(size[-1])),
    )


def _is_mode_conversion(step) -> bool:
    """An RGB / mode conversion (``_convert_to_rgb``, ``MaybeConvertMode``)."""
    name = (getattr(step, "__name__", "") or type(step).__name__).lower()
    return "rgb" in name or "convert" in name
