"""The class tables of the OOD benchmarks (package data).

-   the 200-class subsets of ImageNet-A and ImageNet-R
    (``data/ood/ood_class_subsets.json``): ImageNet-1k indices, sorted. A
    1000-way model is scored on these benchmarks by restricting its output
    to the subset (argmax over the 200 logits), as the authors and timm's
    ``validate.py`` (``valid_labels``) do.
-   ObjectNet's 113 classes that overlap ImageNet-1k, each with its
    ImageNet classes (``data/objectnet/``, the ImageNet testbed's copy of
    the authors' map): :func:`objectnet_classes`.
"""

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Dict, Tuple

from imagenetx.classes.imagenet import NUM_CLASSES
from imagenetx.errors import ImageNetXError

_FILE = "data/ood/ood_class_subsets.json"
#: the subsets the file holds
SUBSETS = ("imagenet_a", "imagenet_r")


@lru_cache(maxsize=1)
def _subsets() -> Dict[str, Tuple[int, ...]]:
    table = json.loads(resources.files("imagenetx.classes").joinpath(_FILE).read_text())
    out = {}
    for name in SUBSETS:
        values = tuple(table.get(name) or ())
        if (len(values) != 200 or len(set(values)) != 200
                or not all(isinstance(v, int) and 0 <= v < NUM_CLASSES for v in values)):
            raise ImageNetXError(
                f"The packaged class subset '{name}' in imagenetx/classes/{_FILE} is "
                "not 200 distinct ImageNet-1k indices: reinstall the package")
        out[name] = tuple(sorted(values))
    return out


def subset_indices(name: str) -> Tuple[int, ...]:
    """The sorted ImageNet-1k indices of ``"imagenet_a"`` or ``"imagenet_r"``.

    Raises:
        ImageNetXError: for another name
    """
    subsets = _subsets()
    if name not in subsets:
        raise ImageNetXError(
            f"Unknown class subset '{name}': use one of {', '.join(SUBSETS)}")
    return subsets[name]


@dataclass(frozen=True)
class ObjectNetClass:
    """One of ObjectNet's 113 classes that overlap ImageNet-1k.

    Attributes:
        folder: its folder in the release's ``images/`` (``alarm_clock``)
        index: its id, 0-112 (the folders sorted, as the testbed's
            ``objectnet_idx_to_imgnet_idxs``)
        label: its ObjectNet label (``Alarm clock``)
        imagenet_indices: the ImageNet-1k classes that count as it
            (``(409, 530)``: analog and digital clock)
    """

    folder: str
    index: int
    label: str
    imagenet_indices: Tuple[int, ...]


def _objectnet_file(name: str):
    path = resources.files("imagenetx.classes").joinpath(f"data/objectnet/{name}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ImageNetXError(
            f"Cannot read the packaged ObjectNet map imagenetx/classes/data/objectnet/{name} "
            f"({e}): reinstall the package") from e


@lru_cache(maxsize=1)
def objectnet_folders() -> Dict[str, str]:
    """All 313 ObjectNet release folders -> their ObjectNet labels."""
    return dict(_objectnet_file("folder_to_objectnet_label.json"))


@lru_cache(maxsize=1)
def objectnet_classes() -> Tuple[ObjectNetClass, ...]:
    """ObjectNet's 113 classes that overlap ImageNet-1k, by id, read as the
    ImageNet testbed's ``eval_settings/objectnet.py`` reads its map."""
    folder_of = {label: folder for folder, label in objectnet_folders().items()}
    index_of = {label: int(i) for i, label in
                _objectnet_file("imagenet_to_labels.json").items()}
    mapped = _objectnet_file("objectnet_to_imagenet_1k.json")
    try:
        pairs = sorted((folder_of[label], label, tuple(index_of[n] for n in names.split("; ")))
                       for label, names in mapped.items())
    except KeyError as e:
        raise ImageNetXError(
            f"The packaged ObjectNet map names {e} that its other files lack: reinstall "
            "the package") from None
    return tuple(ObjectNetClass(folder, i, label, indices)
                 for i, (folder, label, indices) in enumerate(pairs))


def objectnet_indices() -> Tuple[int, ...]:
    """The sorted ImageNet-1k indices of ObjectNet's classes (125): the
    outputs a 1000-way model is restricted to on ObjectNet (the testbed's
    ``class_sublist``)."""
    return tuple(sorted(i for c in objectnet_classes() for i in c.imagenet_indices))
