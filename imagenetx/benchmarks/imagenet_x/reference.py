"""The ImageNet-X authors' per-model result tables, read as data.

The authors' repository (facebookresearch/imagenetx) ships, for groups of
published models and of their own augmentation sweeps, the per-factor
accuracy of every model on the validation images (prototypes left out)::

    results/val/{top,multi}_factor/<group>/{class,metaclass,real_class}/
        accuracies_per_factor.csv            one row per model
        accuracies_per_factor_metaclass.csv  one row per model x meta-class

Columns: ``model`` (``metaclass``), the 16 factors, ``worst_factor``,
``average`` and (overall tables) ``worst_100_classes``. ``real_class`` is
ReaL correctness counting images with an empty ReaL set wrong (our
``real`` in ``paper`` mode).

The files are read at run time: from ``results_dir`` or
``$IMAGENETX_RESULTS_DIR`` when set (a folder holding ``val/...``), else
from the download cache, else from GitHub (``$IMAGENETX_RESULTS_URL``
names a mirror; see
:mod:`imagenetx.store.downloads`). Parsed tables are kept in memory per file
and modification time.
"""

import csv
import functools
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.classes.imagenet import class_table
from imagenetx.errors import ImageNetXError
from imagenetx.options import WHICH
from imagenetx.store.downloads import RemoteFiles

#: the authors' groups of models and runs
GROUPS = (
    "imagenet_testbed",  # 335 models of the ImageNet testbed (Taori et al.)
    "modelvshuman",  # 54 models of model-vs-human (Geirhos et al.)
    "crop",  # random-crop sweep, 1,272 ResNet50 runs
    "colorjitter",  # colour-jitter sweep, 664 runs
    "colorjitter_crop",  # colour jitter + crop, one setting, 12 runs
    "adaptive_colorjitter",  # per-class colour jitter + crop, 8 runs
    "gaussian_blur",  # Gaussian-blur sweep, 161 runs
    "base",  # the toolkit's ResNet50 and DINO
)

#: our correctness mode -> the authors' folder
ERROR_TYPES = {"class": "class", "metaclass": "metaclass", "real": "real_class"}

#: rows that are not models (ImageNet's own labels scored against ReaL)
NOT_MODELS = ("human",)

#: the repository's ``results`` folder on GitHub
RESULTS_URL = "https://raw.githubusercontent.com/facebookresearch/imagenetx/main/results"

#: environment variable naming another address of the ``results`` folder
#: (a mirror)
RESULTS_URL_ENV = "IMAGENETX_RESULTS_URL"

#: environment variable naming a local copy of the ``results`` folder
RESULTS_DIR_ENV = "IMAGENETX_RESULTS_DIR"

_CACHE = {}


@dataclass(frozen=True)
class ReferenceTable:
    """One authors' table.

    Attributes:
        group: the group (:data:`GROUPS`)
        which: ``"top"`` or ``"multi"``
        correct: our correctness mode (``class``, ``metaclass``, ``real``)
        models: the model (run) name of each row
        metaclass: the meta-class of each row (per-meta-class tables), or
            None
        accuracy: ``(rows, 16)`` accuracy per factor, in :data:`FACTORS`
            order; NaN where the table is empty
        average: ``(rows,)`` overall accuracy
        worst_factor: ``(rows,)`` lowest factor accuracy
        worst_100_classes: ``(rows,)``, NaN in per-meta-class tables
        path: the file read
    """

    group: str
    which: str
    correct: str
    models: Tuple[str, ...]
    metaclass: Optional[Tuple[str, ...]]
    accuracy: np.ndarray
    average: np.ndarray
    worst_factor: np.ndarray
    worst_100_classes: np.ndarray
    path: str

    def __len__(self) -> int:
        return len(self.models)

    def is_model(self) -> np.ndarray:
        """Whether each row is a model (not ImageNet's own labels)."""
        return np.array([m not in NOT_MODELS for m in self.models], bool)


def check_choices(group: str, which: str, correct: str) -> None:
    """Raises ImageNetXError for an unknown group, factor labelling, or a
    correctness mode the authors' tables do not have."""
    if group not in GROUPS:
        raise ImageNetXError(
            f"Unknown reference group '{group}': use one of {', '.join(GROUPS)}")
    if which not in WHICH:
        raise ImageNetXError(
            f"Unknown factor labels '{which}': use one of {', '.join(WHICH)}")
    if correct not in ERROR_TYPES:
        raise ImageNetXError(
            f"The authors' tables have no correctness '{correct}': they are "
            f"scored with {', '.join(ERROR_TYPES)} (ReaL in paper mode); pass "
            "`correct` with one of those")


def table_relpath(group: str, which: str, correct: str,
                  metaclass: bool = False) -> str:
    """The table's path below ``results/``."""
    check_choices(group, which, correct)
    name = "accuracies_per_factor" + ("_metaclass" if metaclass else "")
    return f"val/{which}_factor/{group}/{ERROR_TYPES[correct]}/{name}.csv"


def table_file(group: str, which: str = "top", correct: str = "class",
               metaclass: bool = False, results_dir: str = None) -> Path:
    """The local path of one table, downloading it into the cache when
    there is no local folder (see the module docstring)."""
    relpath = table_relpath(group, which, correct, metaclass)
    tables = RemoteFiles(
        name="ImageNet-X reference tables",
        base_url=os.environ.get(RESULTS_URL_ENV) or RESULTS_URL,
        override_env=RESULTS_DIR_ENV, cache_subdir="results",
        option="results_dir")
    return tables.path(relpath, results_dir)


def read_reference(group: str, which: str = "top", correct: str = "class",
                   metaclass: bool = False,
                   results_dir: str = None) -> ReferenceTable:
    """Reads (once per file version) one authors' table.

    Args:
        group: one of :data:`GROUPS`
        which ("top"): ``"top"`` or ``"multi"`` factor labels
        correct ("class"): ``class``, ``metaclass`` or ``real``
        metaclass (False): the per-meta-class table
        results_dir (None): a local folder holding ``val/...``; default
            ``$IMAGENETX_RESULTS_DIR``, else the cache / GitHub

    Raises:
        ImageNetXError: unknown group or mode, missing or malformed table
    """
    path = table_file(group, which, correct, metaclass, results_dir)
    key = (str(path), os.stat(path).st_mtime_ns)
    table = _CACHE.get(key)
    if table is None:
        table = _parse(path, group, which, correct, metaclass)
        _CACHE[key] = table
    return table


def _parse(path: Path, group, which, correct, metaclass) -> ReferenceTable:
    def bad(why):
        return ImageNetXError(
            f"ImageNet-X reference table '{path}' is malformed ({why}): "
            "delete it to download it again, or fix the local copy")

    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise bad(e) from e
    if not rows:
        raise bad("empty file")
    header = rows[0]
    need = ["model", *(["metaclass"] if metaclass else []), *FACTORS,
            "worst_factor", "average"]
    missing = [c for c in need if c not in header]
    if missing:
        raise bad(f"no column {', '.join(missing)}")
    col = {c: header.index(c) for c in header}
    body = [r for r in rows[1:] if r]
    if not body:
        raise bad("no rows")
    if any(len(r) != len(header) for r in body):
        raise bad("rows of unequal length")

    def numbers(name):
        try:
            return np.array([math.nan if r[col[name]] == "" else float(r[col[name]])
                             for r in body])
        except ValueError as e:
            raise bad(f"column {name}: {e}") from e

    accuracy = np.column_stack([numbers(f) for f in FACTORS])
    average = numbers("average")
    if np.isnan(average).any() or ((accuracy < 0) | (accuracy > 1)).any():
        raise bad("accuracies outside 0-1 or a missing average")
    worst100 = (numbers("worst_100_classes") if "worst_100_classes" in col
                else np.full(len(body), math.nan))
    return ReferenceTable(
        group=group, which=which, correct=correct,
        models=tuple(r[col["model"]] for r in body),
        metaclass=tuple(r[col["metaclass"]] for r in body) if metaclass else None,
        accuracy=accuracy, average=average, worst_factor=numbers("worst_factor"),
        worst_100_classes=worst100, path=str(path),
    )


@functools.lru_cache(maxsize=None)
def table_counts(which: str, metaclass: str = None) -> Tuple[int, np.ndarray]:
    """The images behind a table row: ``(images, images per factor)`` of
    the validation images without prototypes (the tables' images), ``top``
    or ``multi`` labels, optionally of one meta-class."""
    val = anno.load_split("val")
    keep = ~val.prototype
    if metaclass is not None:
        names = np.array(class_table().metaclass)
        keep &= names[val.class_index] == metaclass
    matrix = val.top if which == "top" else val.multi
    return int(keep.sum()), matrix[keep].sum(axis=0)
