"""The authors' result tables and the model predictions under
``../shared/data/imagenetx`` (read only; tests skip when absent)."""

import csv
import functools

import numpy as np
import pytest

from conftest import SHARED_DATA
from imagenetx.benchmarks.imagenet_x import annotations as anno

MODELS = ("ResNet50", "DINO")

#: our correctness mode -> the toolkit's table folder
ERROR_TYPES = {"class": "class", "metaclass": "metaclass", "real": "real_class"}

RESULTS = SHARED_DATA / "results" / "val"
PREDICTIONS = SHARED_DATA / "predictions"

needs_shared_data = pytest.mark.skipif(
    not all((PREDICTIONS / f"{m}.csv").exists() for m in MODELS)
    or not RESULTS.is_dir(),
    reason="../shared/data/imagenetx absent",
)


def table_path(which: str, correct: str, metaclass: bool = False):
    name = "accuracies_per_factor" + ("_metaclass" if metaclass else "")
    return RESULTS / f"{which}_factor" / "base" / ERROR_TYPES[correct] / f"{name}.csv"


def read_table(which: str, correct: str, metaclass: bool = False) -> list:
    """The rows of one authors' table, as dicts of strings."""
    with open(table_path(which, correct, metaclass), newline="") as f:
        return list(csv.DictReader(f))


@functools.lru_cache(maxsize=None)
def read_predictions(model: str) -> dict:
    """{file name: (predicted class, probability)} of one model's CSV."""
    with open(PREDICTIONS / f"{model}.csv", newline="") as f:
        return {
            row["file_name"]: (int(row["predicted_class"]),
                               float(row["predicted_probability"]))
            for row in csv.DictReader(f)
        }


@functools.lru_cache(maxsize=None)
def val_arrays():
    """The paper's 46,110 images (prototypes left out): file names, class,
    top and multi factor matrices, ReaL sets."""
    val = anno.load_split("val")
    keep = ~val.prototype
    names = val.file_names[keep]
    real = anno.real_labels()
    return {
        "file_names": names,
        "classes": val.class_index[keep].astype(np.int64),
        "top": val.top[keep],
        "multi": val.multi[keep],
        "real": [real[anno.val_number(n) - 1] for n in names],
    }


@functools.lru_cache(maxsize=None)
def model_arrays(model: str):
    """(predicted class, confidence) of a model on :func:`val_arrays`'s
    images; ``human`` is ImageNet's own label with confidence 1."""
    v = val_arrays()
    if model == "human":
        return v["classes"].copy(), np.ones(len(v["classes"]))
    preds = read_predictions(model)
    pairs = [preds[n] for n in v["file_names"]]
    return (np.array([p for p, _ in pairs], np.int64),
            np.array([c for _, c in pairs], np.float64))
