"""Gavrikov & Keuper's published models: shape bias beside generalization.

"Can Biases in ImageNet Models Explain Generalization?" (Gavrikov & Keuper,
CVPR 2024) measured 70 ImageNet models (48 ResNet-50s trained in different
ways, plus other ResNets and ViTs) on about 1,600 measures and published
them in their repository (paulgavrikov/biases_vs_generalization,
``raw-data/``):

-   ``benchmark.csv``: one row per model; ``model`` (its name), then
    ``shape-bias`` (a fraction, 0 to 1, on the same 1,200 cue-conflict
    images as :mod:`imagenetx.analysis.shape_bias`), accuracies in percent
    (``top1_acc/imagenet``, ``top1_acc/imagenet-a``, ``-r``, ``-v2``,
    ``-sketch``, ``-real``, ImageNet-C per corruption and severity
    ``top1_acc/<corruption>_<severity>``, ``top1_acc/imagenet-c``, ...)
    and other metrics (``metric/bandpass/...``, ``metric/criticalband/...``)
-   ``r50_categories.json``: ``{training method: [model, ...]}`` for the 48
    ResNet-50s of the paper's study; the other 22 models are ``"other"`` here

Measures by name (:data:`MEASURES`): the accuracies on ImageNet and its OOD
sets, ImageNet-C as the authors' ``eval_imagenet_c.py`` averages it (the
mean top-1 accuracy over 19 corruptions x 5 severities, which is the
table's ``top1_acc/imagenet-c``), and the paper's four benchmark groups as
its plotting notebook averages them (``id``, ``robustness``, ``concepts``,
``adversarial``). Any column of ``benchmark.csv`` is a measure by its name
too.

The tables are read from ``published_dir`` or ``$IMAGENETX_GAVRIKOV_DIR``
when set, else downloaded once from the repository (pinned to a commit)
into the cache (:mod:`imagenetx.store.downloads`).
"""

import csv
import difflib
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.store.downloads import RemoteFiles

#: the repository commit the tables are read from
SOURCE_COMMIT = "9168ac87bdf671ff711f6a19e29d0749ab2aad27"
TABLES = RemoteFiles(
    name="Gavrikov & Keuper tables",
    base_url="https://raw.githubusercontent.com/paulgavrikov/"
             f"biases_vs_generalization/{SOURCE_COMMIT}/raw-data",
    override_env="IMAGENETX_GAVRIKOV_DIR",
    cache_subdir="gavrikov/raw-data",
    option="published_dir",
)
BENCHMARK_CSV = "benchmark.csv"
CATEGORIES_JSON = "r50_categories.json"
MODEL_COLUMN = "model"
SHAPE_BIAS_COLUMN = "shape-bias"
#: the category of a model that is not one of the paper's 48 ResNet-50s
OTHER = "other"

#: the populations a comparison can run over
ALL = "all"
RESNET50 = "resnet50"
POPULATIONS = (ALL, RESNET50)
POPULATION_TITLES = {
    ALL: "all published models",
    RESNET50: "the paper's ResNet-50s (its main analysis)",
}

#: ImageNet-C as ``eval_imagenet_c.py`` runs it: 15 + 4 extra corruptions
IMAGENET_C_CORRUPTIONS = (
    "gaussian_noise", "shot_noise", "impulse_noise",
    "defocus_blur", "glass_blur", "motion_blur", "zoom_blur",
    "snow", "frost", "fog", "brightness",
    "contrast", "elastic_transform", "pixelate", "jpeg_compression",
    "speckle_noise", "gaussian_blur", "spatter", "saturate",
)
IMAGENET_C_SEVERITIES = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Measure:
    """A generalization measure: the mean of one or more table columns
    (a model missing some of them averages the others, as pandas'
    ``mean(axis=1)`` in the authors' notebook does).

    Attributes:
        name: what it is asked for by (``imagenet-c``)
        label: an axis title
        columns: the ``benchmark.csv`` columns averaged
        unit: ``"%"`` for accuracies, ``""`` otherwise
        combine: how the columns become one value: ``"mean"``, or
            ``"spectral_bias"`` (the first half of the columns are the
            low-pass, the second the high-pass fractions: HPP / (LPP + HPP)
            of their means, as the authors' notebook computes it)
    """

    name: str
    label: str
    columns: Tuple[str, ...]
    unit: str = "%"
    combine: str = "mean"

    def to_dict(self) -> dict:
        return {"name": self.name, "label": self.label,
                "columns": list(self.columns), "unit": self.unit}

    def reduce(self, values: np.ndarray) -> np.ndarray:
        """One value per model of a ``(columns, models)`` array: the mean
        over the finite entries (pandas' ``mean(axis=1)``), or the spectral
        bias of the two halves; NaN where a model has none."""
        values = np.asarray(values, dtype=float)
        if self.combine == "spectral_bias":
            half = len(self.columns) // 2
            low, high = _nanmean(values[:half]), _nanmean(values[half:])
            with np.errstate(invalid="ignore", divide="ignore"):
                return high / (low + high)
        return _nanmean(values)


def _nanmean(values: np.ndarray) -> np.ndarray:
    finite = np.isfinite(values)
    count = finite.sum(axis=0)
    out = np.where(finite, values, 0.0).sum(axis=0) / np.maximum(count, 1)
    return np.where(count == 0, math.nan, out)


def _acc(name: str, label: str, *sets: str) -> Measure:
    return Measure(name, label, tuple(f"top1_acc/{s}" for s in sets))


#: the measures offered by name
MEASURES: Dict[str, Measure] = {m.name: m for m in (
    _acc("imagenet", "ImageNet accuracy [%]", "imagenet"),
    _acc("imagenet-a", "ImageNet-A accuracy [%]", "imagenet-a"),
    _acc("imagenet-r", "ImageNet-R accuracy [%]", "imagenet-r"),
    _acc("imagenet-v2", "ImageNet-v2 accuracy [%]", "imagenet-v2"),
    _acc("imagenet-sketch", "ImageNet-Sketch accuracy [%]", "imagenet-sketch"),
    _acc("imagenet-c", "ImageNet-C accuracy [%] (19 corruptions x 5 severities)",
         *(f"{c}_{s}" for c in IMAGENET_C_CORRUPTIONS for s in IMAGENET_C_SEVERITIES)),
    _acc("id", "ID accuracy [%] (ImageNet, -v2, -ReaL)",
         "imagenet", "imagenet-v2", "imagenet-real"),
    _acc("robustness", "Robustness accuracy [%] (ImageNet-A, -C, -C-bar)",
         "imagenet-a", "imagenet-c", "imagenet-cbar"),
    _acc("concepts", "Concepts accuracy [%] (ImageNet-Sketch, -R, Stylized)",
         "imagenet-sketch", "imagenet-r", "stylized"),
    _acc("adversarial", "Adversarial accuracy [%] (PGD-40, low budget)", "PGD-40/low"),
)}
#: the band-pass cut-offs the spectral measures average, as the notebook
SPECTRAL_CUTOFFS = ("0.1", "0.2", "0.3", "0.4", "0.5")
_LOW = tuple(f"metric/bandpass/LFC/{c}" for c in SPECTRAL_CUTOFFS)
_HIGH = tuple(f"metric/bandpass/HFC/{c}" for c in SPECTRAL_CUTOFFS)

#: the biases offered by name: the columns the authors' notebook plots
#: (critical band: the ``_norm`` parameters)
BIASES: Dict[str, Measure] = {m.name: m for m in (
    Measure("shape-bias", "Shape bias", (SHAPE_BIAS_COLUMN,), ""),
    Measure("spectral-bias", "Spectral bias HPP / (LPP + HPP)", _LOW + _HIGH, "",
            "spectral_bias"),
    Measure("lpp", "Low-pass performance LPP (c = 0.1..0.5)", _LOW, ""),
    Measure("hpp", "High-pass performance HPP (c = 0.1..0.5)", _HIGH, ""),
    Measure("critical-band-bw", "Critical band: bandwidth [octaves]",
            ("metric/criticalband/bw_norm",), ""),
    Measure("critical-band-cf", "Critical band: centre frequency",
            ("metric/criticalband/cf_norm",), ""),
    Measure("critical-band-pns", "Critical band: peak noise sensitivity",
            ("metric/criticalband/pns_norm",), ""),
)}
DEFAULT_BIASES = ("shape-bias", "spectral-bias", "critical-band-bw",
                  "critical-band-cf", "critical-band-pns")

#: what ``imagenetx shape-bias --published`` reports without ``--measure``
DEFAULT_MEASURES = ("imagenet", "imagenet-a", "imagenet-r", "imagenet-v2",
                    "imagenet-sketch", "imagenet-c")


@dataclass(frozen=True)
class PublishedModels:
    """The published models of one population, with every numeric column.

    Attributes:
        source: where the tables were read from
        models: the models' names, in table order
        categories: per model its training method in ``r50_categories.json``
            (``baseline``, ``augmentation``, ...), or ``"other"``
        columns: ``{column: values}`` for every column but ``model``, one
            value per model (NaN where the table has none)
        population: ``"all"`` or ``"resnet50"`` (:meth:`subset`)
    """

    source: str
    models: Tuple[str, ...]
    categories: Tuple[str, ...]
    columns: Dict[str, np.ndarray]
    population: str = ALL

    def __len__(self) -> int:
        return len(self.models)

    @property
    def shape_bias(self) -> np.ndarray:
        """Each model's shape bias, a fraction from 0 to 1."""
        return self.columns[SHAPE_BIAS_COLUMN]

    @property
    def category_names(self) -> Tuple[str, ...]:
        """The categories present, in first-seen order."""
        return tuple(dict.fromkeys(self.categories))

    def index(self, model: str) -> Optional[int]:
        """The row of a model, or None when it is not published here."""
        try:
            return self.models.index(model)
        except ValueError:
            return None

    def describe(self, name: str) -> Measure:
        """The :class:`Measure` of a name in :data:`MEASURES` or a column.

        Raises:
            ImageNetXError: for a name that is neither, or a column without
                a single value
        """
        measure = MEASURES.get(name) or BIASES.get(name)
        if measure is None:
            if name == MODEL_COLUMN or name not in self.columns:
                close = difflib.get_close_matches(
                    name, list(MEASURES) + list(BIASES) + list(self.columns), n=3)
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                raise ImageNetXError(
                    f"Unknown published measure '{name}'{hint}: name one of "
                    f"{', '.join(MEASURES)}, {', '.join(BIASES)}, or a column of "
                    f"{BENCHMARK_CSV} such "
                    "as top1_acc/fog_3 or metric/criticalband/bw_norm")
            unit = "%" if name.startswith("top1_acc/") else ""
            measure = Measure(name, name + (" [%]" if unit else ""), (name,), unit)
        missing = [c for c in measure.columns if c not in self.columns]
        if missing:
            raise ImageNetXError(
                f"The published table {self.source} lacks the column(s) "
                f"{', '.join(missing[:3])} that measure '{name}' averages: "
                f"read raw-data/{BENCHMARK_CSV} of paulgavrikov/"
                "biases_vs_generalization")
        return measure

    def measure(self, name: str) -> np.ndarray:
        """Each model's value of a measure (NaN where the table has none).

        Raises:
            ImageNetXError: as :meth:`describe`, or when no model has a value
        """
        measure = self.describe(name)
        out = measure.reduce(np.stack([self.columns[c] for c in measure.columns]))
        if not np.isfinite(out).any():
            raise ImageNetXError(
                f"No published model has a value of '{name}' in {self.source}: "
                "pick a measure the table fills in")
        return out

    def subset(self, population: str) -> "PublishedModels":
        """``"all"`` models or the paper's 48 ``"resnet50"`` ones.

        Raises:
            ImageNetXError: for another name
        """
        if population not in POPULATIONS:
            raise ImageNetXError(
                f"Unknown population of published models '{population}': "
                f"name one of {', '.join(POPULATIONS)}")
        if population == ALL:
            return replace(self, population=ALL) if self.population != ALL else self
        keep = np.array([c != OTHER for c in self.categories])
        return replace(
            self, population=population,
            models=tuple(np.array(self.models, dtype=object)[keep]),
            categories=tuple(np.array(self.categories, dtype=object)[keep]),
            columns={k: v[keep] for k, v in self.columns.items()})


def _fix() -> str:
    return (f"point `published_dir` or ${TABLES.override_env} at a folder with "
            f"{BENCHMARK_CSV} and {CATEGORIES_JSON} as in {TABLES.base_url}, or "
            "unset them to download those")


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ImageNetXError(f"The published {what} '{path}' does not exist: {_fix()}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ImageNetXError(f"Could not read the published {what} '{path}' ({e}): {_fix()}") from None


def _read_benchmark(path: Path) -> Tuple[Tuple[str, ...], Dict[str, np.ndarray]]:
    text = _read_text(path, "table")
    try:
        rows = list(csv.reader(text.splitlines()))
    except csv.Error as e:
        raise ImageNetXError(f"The published table '{path}' is not CSV ({e}): {_fix()}") from None
    header = rows[0] if rows else []
    for needed in (MODEL_COLUMN, SHAPE_BIAS_COLUMN):
        if needed not in header:
            raise ImageNetXError(
                f"The published table '{path}' has no '{needed}' column, so it is "
                f"not Gavrikov & Keuper's {BENCHMARK_CSV}: {_fix()}")
    if len(set(header)) != len(header):
        raise ImageNetXError(f"The published table '{path}' repeats a column name: {_fix()}")
    rows = [r for r in rows[1:] if r]
    if not rows:
        raise ImageNetXError(f"The published table '{path}' has no models: {_fix()}")
    model_at = header.index(MODEL_COLUMN)
    for line, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise ImageNetXError(
                f"Row {line} of the published table '{path}' has {len(row)} "
                f"fields where the header has {len(header)}: {_fix()}")
    models = tuple(r[model_at].strip() for r in rows)
    seen = set()
    for model in models:
        if not model or model in seen:
            raise ImageNetXError(
                f"The published table '{path}' has an empty or repeated model "
                f"name ('{model}'): {_fix()}")
        seen.add(model)
    columns = {}
    for j, name in enumerate(header):
        if j == model_at:
            continue
        try:
            columns[name] = np.array(
                [float(r[j]) if r[j].strip() else math.nan for r in rows])
        except ValueError:
            bad = next(r for r in rows if r[j].strip() and not _is_float(r[j]))
            raise ImageNetXError(
                f"The published table '{path}' has '{bad[j]}' for "
                f"{bad[model_at]} in column '{name}', not a number: {_fix()}") from None
    bias = columns[SHAPE_BIAS_COLUMN]
    if not np.isfinite(bias).all() or (bias < 0).any() or (bias > 1).any():
        raise ImageNetXError(
            f"The published table '{path}' has shape biases that are missing "
            "or outside 0 to 1 (a fraction, as the authors publish it): "
            f"{_fix()}")
    return models, columns


def _is_float(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _read_categories(path: Path, models: Sequence[str]) -> Dict[str, str]:
    text = _read_text(path, "categories")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ImageNetXError(f"The published categories '{path}' are not JSON ({e}): {_fix()}") from None
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(m, str) for m in v)
            for k, v in data.items()):
        raise ImageNetXError(
            f"The published categories '{path}' are not {{category: [model, ...]}} "
            f"as {CATEGORIES_JSON}: {_fix()}")
    out = {}
    known = set(models)
    for category, names in data.items():
        for model in names:
            if model in out:
                raise ImageNetXError(
                    f"The published categories '{path}' list {model} twice: {_fix()}")
            if model not in known:
                raise ImageNetXError(
                    f"The published categories '{path}' name {model}, which the "
                    f"table has no row for: read both files from one release ({_fix()})")
            out[model] = category
    return out


def read_published(benchmark_csv, categories_json) -> PublishedModels:
    """The published models from the two files.

    Raises:
        ImageNetXError: for a missing or malformed file, naming it and the
            fix
    """
    benchmark_csv, categories_json = Path(benchmark_csv), Path(categories_json)
    models, columns = _read_benchmark(benchmark_csv)
    category = _read_categories(categories_json, models)
    return PublishedModels(
        source=str(benchmark_csv.parent), models=models,
        categories=tuple(category.get(m, OTHER) for m in models), columns=columns)


def load_published(published_dir: Optional[str] = None) -> PublishedModels:
    """The published models from ``published_dir``, ``$IMAGENETX_GAVRIKOV_DIR``, or
    the cache (downloading the two files on first use).

    Raises:
        ImageNetXError: for a missing folder or file, a failed download or a
            malformed table
    """
    csv_path, json_path = TABLES.paths([BENCHMARK_CSV, CATEGORIES_JSON], published_dir,
                                       progress=False)
    return read_published(csv_path, json_path)
