"""Object edits on one image and its object mask: pure numpy and OpenCV.

The edits follow ImageNet-E's toolkit (alibaba/easyrobust,
``benchmarks/imagenet-e/ImageNet-Editing``) where it uses no learned model:

-   the object is the mask's pixels inside the bounding box of its largest
    part (largest box area), and its size is their share of the image
    (``get_bbox_and_rate`` in ``resize_obj.py``);
-   size: the object is scaled by ``sqrt(target / ratio)``, measured again,
    and scaled again until its ratio is within 0.015 of the target, at most
    50 steps, failing when a step moves the ratio the wrong way
    (``rescale`` in ``resize_obj.py``);
-   position: the object's box moves to a uniformly random place inside the
    image and is composited there with its mask (``find_bbox`` and
    ``change_place`` in ``editing_diffusion/utils/change_place.py``);
-   direction: object and mask are rotated by an angle (counter-clockwise,
    as PIL's ``Image.rotate`` the toolkit calls).

Where the toolkit uses learned models this module uses classical ones: the
hole an edit uncovers is filled by OpenCV's inpainting (Telea or
Navier-Stokes) instead of TFill, and a size edit scales the object alone
inside its unchanged background (the toolkit zooms the whole image about
the object and outpaints the border with a diffusion model). Rotation turns
the object about its own box centre, so it stays where it was (the toolkit
rotates about the image centre and then places the object).

Images are ``H x W x 3`` uint8 arrays (any channel order), masks ``H x W``
bool arrays. Every function returns new arrays and leaves its inputs as
they were.
"""

from dataclasses import dataclass, field
from typing import Optional, Tuple

import cv2
import numpy as np

from imagenetx.errors import ImageNetXError

#: the toolkit's acceptance band around a target object ratio
SIZE_TOLERANCE = 0.015
#: the toolkit's most scaling steps
SIZE_MAX_STEPS = 50
#: OpenCV's inpainting methods by name
INPAINT_METHODS = {"telea": cv2.INPAINT_TELEA, "ns": cv2.INPAINT_NS}
#: inpainting radius in pixels (OpenCV's documented example value)
INPAINT_RADIUS = 3

Box = Tuple[int, int, int, int]


@dataclass
class Edited:
    """One edited image.

    Attributes:
        image: the edited image, same size and dtype as the input
        mask: the object's pixels in the edited image
        details: what the edit did, e.g. ``{"object_ratio": 0.1004}``
    """

    image: np.ndarray
    mask: np.ndarray
    details: dict = field(default_factory=dict)


def object_box(mask: np.ndarray) -> Optional[Box]:
    """The bounding box ``(x, y, w, h)`` of the mask's largest part (by box
    area, 8-connected), None for an empty mask."""
    count, _, stats, _ = cv2.connectedComponentsWithStats(
        mask.astype(np.uint8), connectivity=8)
    if count < 2:
        return None
    areas = stats[1:, cv2.CC_STAT_WIDTH] * stats[1:, cv2.CC_STAT_HEIGHT]
    x, y, w, h = stats[1 + int(np.argmax(areas)), :4]
    return int(x), int(y), int(w), int(h)


def object_mask(mask: np.ndarray) -> np.ndarray:
    """The object: the mask's pixels inside :func:`object_box`.

    Raises:
        ImageNetXError: for an empty mask
    """
    box = object_box(mask)
    if box is None:
        raise ImageNetXError("The object mask is empty: there is no object to edit")
    x, y, w, h = box
    out = np.zeros(mask.shape, bool)
    out[y:y + h, x:x + w] = mask[y:y + h, x:x + w]
    return out


def pixel_ratio(mask: np.ndarray) -> float:
    """The object's share of the image's pixels (the toolkit's "rate")."""
    box = object_box(mask)
    if box is None:
        return 0.0
    x, y, w, h = box
    return float(np.count_nonzero(mask[y:y + h, x:x + w])) / mask.size


def remove_object(image: np.ndarray, hole: np.ndarray, method: str = "telea",
                  radius: int = INPAINT_RADIUS) -> np.ndarray:
    """Fills the hole's pixels from their surroundings (``cv2.inpaint``)."""
    if not hole.any():
        return image.copy()
    return cv2.inpaint(image, hole.astype(np.uint8), radius,
                       _inpaint_flag(method))


def clean_plate(image: np.ndarray, mask: np.ndarray,
                inpaint: str = "telea") -> np.ndarray:
    """The image with its object (:func:`object_mask`) inpainted away: the
    background every size, position and direction edit starts from."""
    _check_pair(image, mask)
    return remove_object(image, object_mask(mask), inpaint)


def resize_object(image: np.ndarray, mask: np.ndarray, target: float,
                  tolerance: float = SIZE_TOLERANCE,
                  max_steps: int = SIZE_MAX_STEPS,
                  inpaint: str = "telea",
                  clean: Optional[np.ndarray] = None) -> Edited:
    """Scales the object until it covers ``target`` of the image's pixels.

    Each step scales the object's box about its centre by
    ``sqrt(target / ratio)`` (the scale accumulates on the original pixels,
    so the object is resampled once), shifted just enough to stay inside
    the image, and measures the ratio again. As in the toolkit, an object
    already within ``tolerance`` is left as it is. The object's old place
    is inpainted before the scaled object is pasted.

    Args:
        image: the image
        mask: the object mask
        target: the object's share of the pixels, in (0, 1)
        tolerance (0.015): how close the ratio must come
        max_steps (50): the most scaling steps
        inpaint ("telea"): ``"telea"`` or ``"ns"``
        clean (None): the image with its object already inpainted away
            (:func:`clean_plate`), shared by several edits of one image

    Returns:
        an :class:`Edited` with ``details`` ``object_ratio``, ``scale`` and
        ``steps``

    Raises:
        ImageNetXError: for a target outside (0, 1), larger than the image
            allows (the object's box filling the image's width or height),
            or not reached within ``max_steps``
    """
    _check_pair(image, mask)
    if not 0 < target < 1:
        raise ImageNetXError(
            f"Size target {target} is out of range: give the object's share "
            "of the image's pixels, between 0 and 1 (e.g. size:0.1)")
    obj = object_mask(mask)
    x, y, w, h = object_box(obj)
    height, width = mask.shape
    ratio = pixel_ratio(obj)
    most = min(width / w, height / h)
    largest = pixel_ratio(_scaled_mask(obj, (x, y, w, h), most)[0])
    if target > largest + tolerance:
        raise ImageNetXError(
            f"Size target {target} is larger than this image allows: its "
            f"object covers at most {largest:.3f} of the pixels (its box "
            "then fills the image's width or height); choose a smaller size")
    scale, steps = 1.0, 0
    new_mask, place, size = obj, (x, y), (w, h)
    while abs(ratio - target) > tolerance:
        grow = ratio < target
        scale = min(scale * np.sqrt(target / ratio), most)
        new_mask, place, size = _scaled_mask(obj, (x, y, w, h), scale)
        new_ratio = pixel_ratio(new_mask)
        steps += 1
        if (grow and new_ratio < ratio) or (not grow and new_ratio > ratio) \
                or steps > max_steps:
            raise ImageNetXError(
                f"Size target {target} not reached: the object's ratio "
                f"stopped at {new_ratio:.4f} after {steps} steps (an object "
                "too thin to scale smoothly); choose another size")
        ratio = new_ratio
    details = {"object_ratio": round(ratio, 5), "scale": round(float(scale), 5),
               "steps": steps}
    if steps == 0:
        return Edited(image.copy(), obj, details)
    crop = image[y:y + h, x:x + w]
    pixels = cv2.resize(crop, size, interpolation=cv2.INTER_AREA
                        if scale < 1 else cv2.INTER_LINEAR)
    return Edited(_composite(image, obj, new_mask, pixels, place, inpaint, clean),
                  new_mask, details)


def move_object(image: np.ndarray, mask: np.ndarray,
                rng: np.random.Generator, inpaint: str = "telea",
                clean: Optional[np.ndarray] = None) -> Edited:
    """Moves the object's box to a uniformly random place inside the image
    (``inpaint`` and ``clean`` as for :func:`resize_object`).

    Returns:
        an :class:`Edited` with ``details`` ``dx`` and ``dy``, the shift in
        pixels
    """
    _check_pair(image, mask)
    obj = object_mask(mask)
    x, y, w, h = object_box(obj)
    height, width = mask.shape
    nx = int(rng.integers(0, width - w + 1))
    ny = int(rng.integers(0, height - h + 1))
    new_mask = np.zeros_like(obj)
    new_mask[ny:ny + h, nx:nx + w] = obj[y:y + h, x:x + w]
    pixels = image[y:y + h, x:x + w]
    out = _composite(image, obj, new_mask, pixels, (nx, ny), inpaint, clean)
    return Edited(out, new_mask, {"dx": nx - x, "dy": ny - y})


def rotate_object(image: np.ndarray, mask: np.ndarray, angle: float,
                  inpaint: str = "telea",
                  clean: Optional[np.ndarray] = None) -> Edited:
    """Rotates the object by ``angle`` degrees counter-clockwise about its
    box centre; what turns out of the image is cut off (``inpaint`` and
    ``clean`` as for :func:`resize_object`).

    Returns:
        an :class:`Edited` with ``details`` ``angle``
    """
    _check_pair(image, mask)
    obj = object_mask(mask)
    x, y, w, h = object_box(obj)
    height, width = mask.shape
    centre = (x + (w - 1) / 2.0, y + (h - 1) / 2.0)
    matrix = cv2.getRotationMatrix2D(centre, float(angle), 1.0)
    turned = cv2.warpAffine(image, matrix, (width, height),
                            flags=cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_REPLICATE)
    new_mask = cv2.warpAffine(obj.astype(np.uint8) * 255, matrix,
                              (width, height), flags=cv2.INTER_LINEAR) >= 128
    out = _cleaned(image, obj, inpaint, clean)
    out[new_mask] = turned[new_mask]
    return Edited(out, new_mask, {"angle": float(angle)})


def replace_background(image: np.ndarray, mask: np.ndarray,
                       background: np.ndarray) -> Edited:
    """Composites the object onto another background, resized to the
    image's size.

    Returns:
        an :class:`Edited` (empty ``details``)
    """
    _check_pair(image, mask)
    if background.ndim != 3 or background.shape[2] != image.shape[2]:
        raise ImageNetXError(
            f"The background has shape {background.shape}, not an image of "
            f"{image.shape[2]} channels")
    obj = object_mask(mask)
    height, width = mask.shape
    out = background
    if background.shape[:2] != (height, width):
        out = cv2.resize(background, (width, height), interpolation=cv2.INTER_AREA)
    out = out.copy()
    out[obj] = image[obj]
    return Edited(out, obj)


def _scaled_mask(obj: np.ndarray, box: Box, scale: float):
    """The object mask scaled about its box centre and shifted inside the
    image: ``(mask, (left, top), (new width, new height))``."""
    x, y, w, h = box
    height, width = obj.shape
    nw = min(max(1, int(round(w * scale))), width)
    nh = min(max(1, int(round(h * scale))), height)
    crop = obj[y:y + h, x:x + w].astype(np.uint8) * 255
    small = cv2.resize(crop, (nw, nh), interpolation=cv2.INTER_AREA
                       if scale < 1 else cv2.INTER_LINEAR) >= 128
    left = int(np.clip(round(x + w / 2 - nw / 2), 0, width - nw))
    top = int(np.clip(round(y + h / 2 - nh / 2), 0, height - nh))
    out = np.zeros_like(obj)
    out[top:top + nh, left:left + nw] = small
    return out, (left, top), (nw, nh)


def _composite(image, old, new, pixels, place, inpaint, clean) -> np.ndarray:
    """Inpaints the old object, then pastes ``pixels`` (the new object's
    box) at ``place`` where ``new``."""
    left, top = place
    ph, pw = pixels.shape[:2]
    out = _cleaned(image, old, inpaint, clean)
    window = out[top:top + ph, left:left + pw]
    inside = new[top:top + ph, left:left + pw]
    window[inside] = pixels[inside]
    return out


def _cleaned(image, obj, inpaint, clean) -> np.ndarray:
    """A copy of the image with the object inpainted away. The whole object
    is inpainted, not only what an edit leaves uncovered, so no pixel of it
    feeds the fill, and one fill serves every edit of the image."""
    if clean is None:
        return remove_object(image, obj, inpaint)
    if clean.shape != image.shape:
        raise ImageNetXError(
            f"The clean plate is {clean.shape}, the image {image.shape}")
    return clean.copy()


def _check_pair(image: np.ndarray, mask: np.ndarray) -> None:
    if image.ndim != 3 or image.dtype != np.uint8:
        raise ImageNetXError(
            f"Expected an H x W x 3 uint8 image, got {image.dtype} {image.shape}")
    if mask.shape != image.shape[:2]:
        raise ImageNetXError(
            f"The mask is {mask.shape[1]} x {mask.shape[0]} but the image is "
            f"{image.shape[1]} x {image.shape[0]}")


def _inpaint_flag(method: str) -> int:
    try:
        return INPAINT_METHODS[method]
    except KeyError:
        raise ImageNetXError(
            f"Unknown inpainting method '{method}': use "
            f"{' or '.join(INPAINT_METHODS)}") from None
