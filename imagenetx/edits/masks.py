"""Object masks from FiftyOne labels: ``fo.Segmentation`` fields, or instance
masks on ``fo.Detection`` / ``fo.Detections`` fields."""

from typing import Optional, Union

import cv2
import fiftyone as fo
import numpy as np

from imagenetx.errors import ImageNetXError

#: the label types a mask field may hold
MASK_TYPES = (fo.Segmentation, fo.Detection, fo.Detections)


def check_mask_field(samples, field: str) -> type:
    """The label type of a mask field.

    Raises:
        ImageNetXError: for a missing field, or one that holds no masks
    """
    dataset = samples._dataset
    if not field or not samples.has_field(field):
        raise ImageNetXError(
            f"Dataset '{dataset.name}' has no field '{field}': pass the "
            "fo.Segmentation or fo.Detections (with instance masks) field "
            "as `mask_field`")
    doc_type = getattr(samples.get_field(field), "document_type", None)
    if not (isinstance(doc_type, type) and issubclass(doc_type, MASK_TYPES)):
        kind = getattr(doc_type, "__name__", None) or type(samples.get_field(field)).__name__
        raise ImageNetXError(
            f"Field '{field}' of dataset '{dataset.name}' holds {kind}, not "
            "object masks: pass a fo.Segmentation field, or a fo.Detection(s) "
            "field whose detections carry instance masks, as `mask_field`")
    return doc_type


def label_mask(label, shape: tuple, target: Union[str, int, None] = None,
               mask_targets: Optional[dict] = None) -> Optional[np.ndarray]:
    """The object mask a label gives on an image of ``shape`` (H, W, ...).

    Args:
        label: a ``fo.Segmentation``, ``fo.Detection`` or ``fo.Detections``
            (or None)
        shape: the image's shape
        target (None): which object: for a segmentation, a pixel value or a
            label of ``mask_targets`` (None: every non-zero pixel); for
            detections, a label (None: the largest box)
        mask_targets (None): the field's ``{value: label}``

    Returns:
        an ``H x W`` bool array, or None when the label gives no such object
    """
    height, width = shape[:2]
    if label is None:
        return None
    if isinstance(label, fo.Segmentation):
        mask = label.get_mask()
        if mask is None:
            return None
        if mask.ndim == 3:  # RGB masks: any non-black pixel
            if target is not None:
                raise ImageNetXError(
                    "An RGB segmentation mask cannot pick an object by label: "
                    "leave out the object label")
            mask = mask.any(axis=2)
        elif target is None:
            mask = mask != 0
        else:
            mask = mask == _pixel_value(target, mask_targets)
        if mask.shape != (height, width):
            mask = cv2.resize(mask.astype(np.uint8), (width, height),
                              interpolation=cv2.INTER_NEAREST)
        return mask.astype(bool)
    detections = label.detections if isinstance(label, fo.Detections) else [label]
    detections = [d for d in detections if d.has_mask and d.bounding_box
                  and (target is None or d.label == target)]
    if not detections:
        return None
    largest = max(detections, key=lambda d: d.bounding_box[2] * d.bounding_box[3])
    return largest.to_segmentation(frame_size=(width, height)).mask > 0


def _pixel_value(target: Union[str, int], mask_targets: Optional[dict]) -> int:
    if isinstance(target, int) or str(target).isdigit():
        return int(target)
    for value, name in (mask_targets or {}).items():
        if name == target:
            return int(value)
    raise ImageNetXError(
        f"No mask target is labelled '{target}': the field's mask targets "
        f"are {mask_targets or 'not set'}; give a pixel value or one of "
        "their labels")


def resolve_target(mask_type: type, target: Union[str, int, None],
                   mask_targets: Optional[dict]) -> Union[str, int, None]:
    """Which object to edit, checked once: a pixel value for segmentations
    (from a value or a mask-target label), a label for detections.

    Raises:
        ImageNetXError: for a label the segmentation's mask targets lack
    """
    if target is None or target == "":
        return None
    if issubclass(mask_type, fo.Segmentation):
        return _pixel_value(target, mask_targets)
    return str(target)


def mask_fields(samples) -> list:
    """The fields of a collection that can hold object masks, sorted."""
    schema = samples.get_field_schema()
    return sorted(name for name, ftype in schema.items()
                  if isinstance(getattr(ftype, "document_type", None), type)
                  and issubclass(ftype.document_type, MASK_TYPES))
