"""The 113 ImageNet-D classes and the nuisance vocabularies that made it.

Read once from the authors' files shipped in ``data/imagenet_d/`` (from
``chenshuang-zhang/imagenet_d``, MIT license, ``LICENSE`` beside them):

-   ``imgnet_d_dir2imgnet_d_id.txt``: class folder -> ``[id 0-112, name]``
-   ``imgnet_d2imgnet_id.txt``: class folder -> its ImageNet-1k indices
-   ``background.csv`` (468), ``texture.csv`` (47), ``material.csv`` (32):
    the nuisances the images were generated with (``code,name``)
"""

import csv
import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Dict, Optional, Tuple

from imagenetx.errors import ImageNetXError

#: the three nuisance subsets, as the release names its top folders
NUISANCES = ("background", "texture", "material")

NUM_CLASSES = 113

_REINSTALL = ("reinstall the package (`pip install --force-reinstall "
              "git+https://github.com/imagenet-x/fiftyone-imagenet-x`)")


@dataclass(frozen=True)
class ImageNetDClass:
    """One ImageNet-D class.

    Attributes:
        folder: the release's folder name, ``chair``
        index: the ImageNet-D id, 0-112
        name: the display name, ``binder_(closed)``
        imagenet_indices: the ImageNet-1k class indices that count as it
    """

    folder: str
    index: int
    name: str
    imagenet_indices: Tuple[int, ...]


def normalize(text: str) -> str:
    """Lower case, every run of other characters than letters and digits
    made one ``_``: ``"Coffee/French press"`` -> ``"coffee_french_press"``."""
    return re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_")


def _read(name: str) -> str:
    path = resources.files("imagenetx.classes") / "data" / "imagenet_d" / name
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ImageNetXError(
            f"Cannot read the packaged ImageNet-D file '{name}': {e}; {_REINSTALL}"
        ) from e


@functools.lru_cache(maxsize=None)
def imagenet_d_classes() -> Tuple[ImageNetDClass, ...]:
    """The 113 classes, ordered by ImageNet-D id."""
    try:
        ids = json.loads(_read("imgnet_d_dir2imgnet_d_id.txt"))
        indices = json.loads(_read("imgnet_d2imgnet_id.txt"))
        classes = sorted(
            (
                ImageNetDClass(folder, int(i), str(name),
                               tuple(int(k) for k in indices[folder]))
                for folder, (i, name) in ids.items()
            ),
            key=lambda c: c.index,
        )
    except (ValueError, TypeError, KeyError) as e:
        raise ImageNetXError(
            f"The packaged ImageNet-D class files are malformed ({e!r}); {_REINSTALL}"
        ) from e
    if (
        [c.index for c in classes] != list(range(NUM_CLASSES))
        or set(indices) != set(ids)
        or not all(c.imagenet_indices for c in classes)
        or not all(0 <= k < 1000 for c in classes for k in c.imagenet_indices)
    ):
        raise ImageNetXError(
            f"The packaged ImageNet-D class files do not describe {NUM_CLASSES} "
            f"classes with ImageNet-1k indices; {_REINSTALL}"
        )
    return tuple(classes)


@functools.lru_cache(maxsize=None)
def class_by_folder() -> Dict[str, ImageNetDClass]:
    """``{folder name: ImageNetDClass}``."""
    return {c.folder: c for c in imagenet_d_classes()}


@functools.lru_cache(maxsize=None)
def _class_keys() -> Dict[str, ImageNetDClass]:
    keys = {}
    for c in imagenet_d_classes():
        keys[normalize(c.folder)] = c
        keys[normalize(c.name)] = c
    return keys


def find_class(text: str) -> Optional[ImageNetDClass]:
    """The class a folder name or display name names (any case, any
    separators: ``"alarm clock"``, ``"T-shirt"``), else None."""
    return _class_keys().get(normalize(text)) if text else None


def class_prefix(stem: str) -> Optional[ImageNetDClass]:
    """The class whose name begins a file name stem (``chair_0012``), the
    longest such name, else None."""
    key = normalize(stem)
    best = None
    for name, c in _class_keys().items():
        if (key == name or key.startswith(name + "_")) and (
            best is None or len(name) > len(best[0])
        ):
            best = (name, c)
    return best[1] if best else None


@functools.lru_cache(maxsize=None)
def nuisance_vocabulary(kind: str) -> Tuple[str, ...]:
    """The names of one nuisance subset's vocabulary, in the authors' order
    (``street-s``, ``bedroom-s``, ... for ``background``)."""
    if kind not in NUISANCES:
        raise ImageNetXError(
            f"Unknown ImageNet-D nuisance '{kind}': use one of {', '.join(NUISANCES)}"
        )
    rows = list(csv.DictReader(_read(f"{kind}.csv").splitlines()))
    if not rows or any(not r.get("name") for r in rows):
        raise ImageNetXError(
            f"The packaged ImageNet-D vocabulary '{kind}.csv' is malformed; {_REINSTALL}"
        )
    return tuple(r["name"].strip() for r in rows)


@functools.lru_cache(maxsize=None)
def _vocabulary_keys(kind: str) -> Dict[str, str]:
    keys = {}
    for name in nuisance_vocabulary(kind):
        key = normalize(name)
        keys.setdefault(key, name)
        # scene names carry Broden's "-s" suffix: "street-s" is also "street"
        if kind == "background" and key.endswith("_s"):
            keys.setdefault(key[:-2], name)
    return keys


def find_nuisance_value(text: str, kind: str) -> Optional[str]:
    """The vocabulary entry of ``kind`` that ``text`` names, else None."""
    return _vocabulary_keys(kind).get(normalize(text)) if text else None
