"""Parse the packaged ImageNet-X annotation files once, into arrays.

Each split (``val``, ``train``) becomes a :class:`SplitAnnotations`: one row
per annotated image, keyed by image file name, with the top-factor and
multi-factor labels as boolean matrices whose columns follow
:data:`imagenetx.benchmarks.imagenet_x.factors.FACTORS`.
"""

import csv
import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.memory import gc_paused
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.classes.imagenet import (
    NUM_CLASSES,
    REINSTALL_HINT,
    annotation_file,
    class_table,
)

SPLITS = ("val", "train")

VAL_FILE_RE = re.compile(r"^ILSVRC2012_val_(\d{8})\.JPEG$")
TRAIN_FILE_RE = re.compile(r"^(n\d{8})_\d+\.JPEG$")


@dataclass(frozen=True)
class SplitAnnotations:
    """The ImageNet-X labels of one split.

    Attributes:
        split: ``"val"`` or ``"train"``
        file_names: the image file names, one per row
        class_index: the ImageNet class index of each image
        top: ``(n, 16)`` bool matrix of the top factor (one per row, except
            for a handful of images that the annotators gave none)
        multi: ``(n, 16)`` bool matrix of all the factors of each image
        justification: the annotator's free-text justification
        one_word: the annotator's one-word (or few-word) summary
        prototype: whether the image is one of the 3,000 prototypes that
            the paper leaves out of its statistics
        row_of: file name -> row
    """

    split: str
    file_names: np.ndarray
    class_index: np.ndarray
    top: np.ndarray
    multi: np.ndarray
    justification: list
    one_word: list
    prototype: np.ndarray
    row_of: dict = field(repr=False)

    def __len__(self):
        return len(self.file_names)

    @property
    def top_factor(self) -> list:
        """The top factor name of each row, or None where there is none."""
        idx = self.top.argmax(axis=1)
        has = self.top.any(axis=1)
        return [FACTORS[i] if h else None for i, h in zip(idx, has)]

    def factor_lists(self) -> list:
        """The multi-factor labels of each row, as lists of names."""
        names = np.array(FACTORS, dtype=object)
        return [list(names[row]) for row in self.multi]


def _read_jsonl(path: Path) -> list:
    try:
        text = path.read_text()
        # one json.loads of the whole file is ~3x faster than one per line
        return json.loads("[" + ",".join(text.strip().splitlines()) + "]")
    except (ValueError, UnicodeDecodeError) as e:
        raise ImageNetXError(
            f"Cannot parse ImageNet-X annotation file '{path}': {e}; "
            f"{REINSTALL_HINT}"
        ) from e


def _factor_matrix(records: list, path: Path) -> np.ndarray:
    try:
        return np.array(
            [[r[f] for f in FACTORS] for r in records], dtype=bool
        ).reshape(len(records), len(FACTORS))
    except (KeyError, TypeError) as e:
        raise ImageNetXError(
            f"ImageNet-X annotation file '{path}' lacks factor column {e}; "
            f"{REINSTALL_HINT}"
        ) from e


@functools.lru_cache(maxsize=None)
@gc_paused()
def load_split(split: str = "val") -> SplitAnnotations:
    """Parses (once per process) the annotations of a split.

    Args:
        split: ``"val"`` or ``"train"``

    Returns:
        a :class:`SplitAnnotations`
    """
    if split not in SPLITS:
        raise ImageNetXError(
            f"Unknown split '{split}': use one of {', '.join(SPLITS)}"
        )

    top_path = annotation_file(f"imagenet_x_{split}_top_factor.jsonl")
    multi_path = annotation_file(f"imagenet_x_{split}_multi_factor.jsonl")
    top_records = _read_jsonl(top_path)
    multi_records = _read_jsonl(multi_path)

    try:
        file_names = np.array([r["file_name"] for r in top_records])
        class_index = np.array([r["class"] for r in top_records], np.int16)
        multi_names = [r["file_name"] for r in multi_records]
    except (KeyError, TypeError, ValueError) as e:
        raise ImageNetXError(
            f"ImageNet-X annotation file '{top_path}' or '{multi_path}' has "
            f"a malformed row ({e}); {REINSTALL_HINT}"
        ) from e

    if multi_names != list(file_names):
        raise ImageNetXError(
            f"ImageNet-X files '{top_path}' and '{multi_path}' list "
            f"different images; {REINSTALL_HINT}"
        )
    if class_index.size and (
        class_index.min() < 0 or class_index.max() >= NUM_CLASSES
    ):
        raise ImageNetXError(
            f"ImageNet-X annotation file '{top_path}' has class ids outside "
            f"0-{NUM_CLASSES - 1}; {REINSTALL_HINT}"
        )

    prototypes = _prototype_names()
    return SplitAnnotations(
        split=split,
        file_names=file_names,
        class_index=class_index,
        top=_factor_matrix(top_records, top_path),
        multi=_factor_matrix(multi_records, multi_path),
        justification=[r.get("justification") for r in top_records],
        one_word=[r.get("one_word") for r in top_records],
        prototype=np.array([n in prototypes for n in file_names], bool),
        row_of={n: i for i, n in enumerate(file_names)},
    )


@functools.lru_cache(maxsize=None)
def _prototype_names() -> frozenset:
    path = annotation_file("prototypical_paths.csv")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0] != ["file_name"]:
        raise ImageNetXError(
            f"ImageNet-X annotation file '{path}' has no `file_name` "
            f"column; {REINSTALL_HINT}"
        )
    return frozenset(row[0] for row in rows[1:] if row)


@functools.lru_cache(maxsize=None)
@gc_paused()
def filename_labels() -> tuple:
    """``(file names, labels)`` of the validation images as the package's
    ``filename_label.csv`` lists them: the original toolkit's row order
    (ImageFolder order, by class, then name), which it pairs with the rows
    of a model's logits."""
    with open(annotation_file("filename_label.csv"), newline="") as f:
        reader = csv.reader(f)
        next(reader, None)
        rows = [row for row in reader if row]
    return tuple(r[0] for r in rows), tuple(int(r[1]) for r in rows)


@functools.lru_cache(maxsize=None)
@gc_paused()
def val_labels() -> np.ndarray:
    """The original ImageNet label of each of the 50,000 validation images.

    Returns:
        an int16 array; entry ``i`` is the class of
        ``ILSVRC2012_val_{i + 1:08d}.JPEG``
    """
    path = annotation_file("filename_label.csv")
    labels = np.full(50000, -1, np.int16)
    for name, label in zip(*filename_labels()):
        labels[val_number(name) - 1] = label
    if (labels < 0).any():
        raise ImageNetXError(
            f"ImageNet-X annotation file '{path}' misses labels for "
            f"{int((labels < 0).sum())} validation images; {REINSTALL_HINT}"
        )
    return labels


@functools.lru_cache(maxsize=None)
@gc_paused()
def real_labels() -> list:
    """The ReaL labels (Beyer et al., 2020) of the 50,000 validation images.

    Returns:
        a list of 50,000 lists of class indices; entry ``i`` belongs to
        ``ILSVRC2012_val_{i + 1:08d}.JPEG``. An empty list means the ReaL
        raters found no valid label for that image.
    """
    path = annotation_file("imagenet_real_labels.jsonl")
    try:
        labels = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise ImageNetXError(
            f"Cannot parse ImageNet-X annotation file '{path}': {e}; "
            f"{REINSTALL_HINT}"
        ) from e
    if not isinstance(labels, list) or len(labels) != 50000:
        raise ImageNetXError(
            f"ImageNet-X annotation file '{path}' does not hold 50,000 label "
            f"lists; {REINSTALL_HINT}"
        )
    return labels


def val_number(file_name: str) -> int:
    """Returns the 1-based number of a validation image file name."""
    return int(file_name[15:23])


def split_of(file_name: str):
    """Returns ``"val"``, ``"train"`` or None for an image file name."""
    if VAL_FILE_RE.match(file_name):
        return "val"
    if TRAIN_FILE_RE.match(file_name):
        return "train"
    return None


def class_of_file(file_name: str):
    """Returns the class index that an ImageNet file name itself implies.

    Validation file names map through the official validation labels,
    training file names through their WordNet id prefix; anything else
    returns None.
    """
    m = VAL_FILE_RE.match(file_name)
    if m:
        return int(val_labels()[int(m.group(1)) - 1])
    m = TRAIN_FILE_RE.match(file_name)
    if m:
        return _wnid_index().get(m.group(1))
    return None


@functools.lru_cache(maxsize=None)
def _wnid_index() -> dict:
    return {w: i for i, w in enumerate(class_table().wnids)}
