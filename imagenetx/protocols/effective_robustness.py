"""The ImageNet testbed's effective-robustness lines, as its code draws them.

Taori et al. (NeurIPS 2020) fit, for each distribution shift, a line of
shift top-1 on clean top-1 over the testbed's standard models, on logit
axes; a model's *effective robustness* is how far its shift accuracy lies
above that line. This module is the data of those lines: which columns of
the testbed's table (``data/testbed/robustness_top1s.csv``, shipped verbatim
with its source in ``data/testbed/README.md``) each shift compares
(:data:`SHIFTS`), which models each line is fitted over (the rules of the
testbed's ``plotting/paper_*.py`` scripts, cited per shift), and the
zero-shot line of open_clip's published table where that table has both
columns. The arithmetic is :mod:`imagenetx.metrics.effective_robustness`.

- :data:`SHIFTS`, :func:`shift_columns`: each shift's two columns and rule
- :func:`fit_line`: a shift's line, its models and its bootstrap band
- :func:`effective_robustness`: a model's distance above a shift's line
- :func:`testbed_model`: every shift's numbers for one testbed model
- :func:`zero_shot_line`: the same fit over open_clip's zero-shot models
"""

from __future__ import annotations

import csv
import difflib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple, Union

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.effective_robustness import (
    Band,
    LogitLine,
    bootstrap_band,
    fit_logit_line,
    logit,
    logit_grid,
)
from imagenetx.protocols.published import OPEN_CLIP_TABLE

#: the testbed's shipped tables (``data/testbed/README.md``)
TESTBED = Path(__file__).parent / "data" / "testbed"
TESTBED_TABLE = TESTBED / "robustness_top1s.csv"
MODEL_TYPES = TESTBED / "model_types.json"

#: the testbed's commit the tables and the rules below come from
TESTBED_COMMIT = "0170eec658d664289d9f61de8f90f967f49abca0"

#: ImageNet-C's on-disk average and the paper's "corruptions averaged",
#: columns the testbed derives (``plotting/dataframe.py``) rather than stores
AVG_IMAGENET_C_ON_DISK = "avg_imagenet_c_on_disk"
AVG_CORRUPTIONS = "avg_corruptions"

#: open_clip's column of clean ImageNet top-1 (a fraction)
OPEN_CLIP_CLEAN = "ImageNet 1k"


@dataclass(frozen=True)
class Shift:
    """One shift: the testbed's two columns and the rule of its line.

    Attributes:
        name: our key (``imagenet-v2-matched-frequency``)
        title: in words
        x_column, y_column: the testbed's clean and shift columns (x is
            class-matched: ImageNet val restricted to the shift's classes)
        types: the model-type map the script reads (``nat_model_types_map``
            or ``model_types_map``); its ``STANDARD`` models make the line
        shown_from: the script's ``show_in_plot`` threshold on ``x_column``
        pad: the plot's x limits beyond the shown models, ``(below,
            above)`` in points: the default grid of the band
        excluded: lowercase names the script leaves out of the plot
        not_standard: lowercase name parts that make a model non-standard
            (ImageNet-R's DeepAugment models)
        pivot: where a piecewise line breaks, on ``x_column`` (ImageNet-A)
        zero_shot_column: open_clip's column of the same shift, where its
            clean column (``ImageNet 1k``) matches ``x_column``
        source: the testbed's file and lines the rule is read from
    """

    name: str
    title: str
    x_column: str
    y_column: str
    types: str
    shown_from: float
    pad: Tuple[float, float] = (1.0, 0.5)
    excluded: Tuple[str, ...] = ()
    not_standard: Tuple[str, ...] = ()
    pivot: Optional[float] = None
    zero_shot_column: Optional[str] = None
    source: str = ""


_V2 = "plotting/paper_nat_shift_imagenetv2.py lines 16-29, 33-36, 60-61"
_C = "plotting/paper_eff_robust_corruptions.py lines 18-33, 62-66, 90-91"

#: the shifts, by key
SHIFTS: Dict[str, Shift] = {s.name: s for s in (
    Shift("imagenet-v2-matched-frequency", "ImageNetV2 (matched frequency)", "val",
          "imagenetv2-matched-frequency-format-val", "nat_model_types_map", 55,
          zero_shot_column="ImageNet v2", source=_V2),
    # no figure of its own upstream: the matched-frequency rule, on its column
    Shift("imagenet-v2-threshold-0.7", "ImageNetV2 (threshold 0.7)", "val",
          "imagenetv2-threshold-0.7-format-val", "nat_model_types_map", 55,
          source=_V2 + " (the matched-frequency rule)"),
    Shift("imagenet-v2-top-images", "ImageNetV2 (top images)", "val",
          "imagenetv2-top-images-format-val", "nat_model_types_map", 55,
          source=_V2 + " (the matched-frequency rule)"),
    Shift("imagenet-sketch", "ImageNet-Sketch", "val", "imagenet-sketch", "model_types_map", 55,
          zero_shot_column="ImageNet Sketch",
          source="plotting/paper_appendix_imagenet_sketch.py lines 16-32, 56-57"),
    Shift("objectnet", "ObjectNet", "val-on-objectnet-classes", "objectnet-1.0-beta",
          "nat_model_types_map", 55, source="plotting/paper_objectnet.py lines 16-36, 64-65"),
    Shift("imagenet-a", "ImageNet-A", "val-on-imagenet-a-classes", "imagenet-a",
          "nat_model_types_map", 75, pad=(1.0, 0.8), excluded=("resnet50",), pivot=91.86,
          source="plotting/paper_imagenet_a.py lines 16-45, 72-73, 80-83; "
                 "plotting/plotter.py lines 1098-1153"),
    Shift("imagenet-r", "ImageNet-R", "val-on-imagenet-r-classes", "imagenet-r",
          "model_types_map", 75, not_standard=("deepaugment",),
          source="plotting/paper_appendix_imagenet_r.py lines 17-50, 74-75"),
    Shift("imagenet-c", "ImageNet-C (19 corruptions on disk, averaged)", "val",
          AVG_IMAGENET_C_ON_DISK, "model_types_map", 55,
          source=_C + " (the rule); plotting/dataframe.py lines 147-173 (the average)"),
    Shift("corruptions-averaged", "Corruptions averaged (ImageNet-C in memory and on disk, "
          "greyscale, Stylized ImageNet)", "val", AVG_CORRUPTIONS, "model_types_map", 55,
          source=_C + "; plotting/dataframe.py lines 119-137 (the average)"),
)}

#: other names of a shift
ALIASES = {"imagenet-v2": "imagenet-v2-matched-frequency", "imagenetv2": "imagenet-v2-matched-frequency"}


def shift_columns() -> Dict[str, Tuple[str, str]]:
    """Each shift's ``(x column, y column)`` of the testbed's table."""
    return {n: (s.x_column, s.y_column) for n, s in SHIFTS.items()}


def get_shift(name: Union[str, Shift]) -> Shift:
    """The shift called ``name`` (a key of :data:`SHIFTS` or an alias)."""
    if isinstance(name, Shift):
        return name
    key = ALIASES.get(name, name)
    if key not in SHIFTS:
        raise ImageNetXError(f"Unknown shift '{name}': use one of {', '.join(SHIFTS)}")
    return SHIFTS[key]


# -- the testbed's table ------------------------------------------------------


@dataclass(frozen=True)
class TestbedTable:
    """The testbed's top-1 table.

    Attributes:
        models: row names, in the file's order (the order is part of the
            bootstrap's draw)
        columns: the evaluation settings
        top1: ``(models, columns)`` percent, NaN where not evaluated
    """

    models: Tuple[str, ...]
    columns: Tuple[str, ...]
    top1: np.ndarray = field(repr=False)

    def column(self, name: str) -> np.ndarray:
        """A column's ``(models,)`` top-1, a derived average included
        (:data:`AVG_IMAGENET_C_ON_DISK`, :data:`AVG_CORRUPTIONS`)."""
        if name in (AVG_IMAGENET_C_ON_DISK, AVG_CORRUPTIONS):
            return _corruption_averages()[name]
        if name not in self.columns:
            raise ImageNetXError(f"Unknown testbed column '{name}'")
        return self.top1[:, self.columns.index(name)]


@lru_cache(maxsize=1)
def testbed_table() -> TestbedTable:
    """The shipped ``robustness_top1s.csv``, read once."""
    with open(TESTBED_TABLE, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    columns = tuple(rows[0][1:])
    models = tuple(r[0] for r in rows[1:])
    top1 = np.array([[float(v) if v else np.nan for v in r[1:]] for r in rows[1:]])
    top1.setflags(write=False)
    return TestbedTable(models, columns, top1)


@lru_cache(maxsize=1)
def model_types() -> Dict[str, Dict[str, str]]:
    """``{"model_types_map": {model: type}, "nat_model_types_map": ...}``
    (the testbed's ``plotting/model_types.py`` as JSON)."""
    with open(MODEL_TYPES, encoding="utf-8") as f:
        return json.load(f)


@lru_cache(maxsize=None)
def _corruption_averages() -> Dict[str, np.ndarray]:
    """The testbed's corruption averages (``plotting/dataframe.py``): each
    ``imagenet-c.<corruption>.<severity>_<type>`` group averaged over its
    severities (lines 120-127, 148-154), then ImageNet-C's on-disk groups
    averaged (lines 170-173) and every group with greyscale and Stylized
    ImageNet averaged (lines 134-135); a model missing any one is NaN, as
    pandas' ``mean(skipna=False)``."""
    table = testbed_table()
    groups: Dict[str, list] = {}
    for j, c in enumerate(table.columns):
        if c.startswith("imagenet-c."):
            groups.setdefault(f"{c.split('.')[1]}_{c.split('_')[-1]}", []).append(j)
    per_group = {g: table.top1[:, idx].mean(axis=1) for g, idx in groups.items()}
    on_disk = [v for g, v in per_group.items() if g.endswith("_on-disk")]
    everything = list(per_group.values()) + [
        table.top1[:, table.columns.index(c)] for c in ("greyscale", "stylized_imagenet")]
    return {AVG_IMAGENET_C_ON_DISK: np.mean(on_disk, axis=0),
            AVG_CORRUPTIONS: np.mean(everything, axis=0)}


def model_type(model: str, shift: Union[str, Shift, None] = None) -> str:
    """A testbed model's type as a shift's script reads it (``STANDARD``,
    ``ROBUST_INTV``, ``MORE_DATA``, ...; ImageNet-R's DeepAugment models are
    ``DEEPAUGMENT``); without a shift, ``model_types_map``'s."""
    s = get_shift(shift) if shift is not None else None
    kind = model_types()[s.types if s else "model_types_map"].get(model)
    if kind is None:
        raise _unknown_model(model)
    if s is not None and any(part in model.lower() for part in s.not_standard):
        return "DEEPAUGMENT"
    return kind


def _unknown_model(model: str) -> ImageNetXError:
    close = difflib.get_close_matches(model, testbed_table().models, n=3)
    hint = f" (close: {', '.join(close)})" if close else ""
    return ImageNetXError(f"Unknown testbed model '{model}'{hint}")


# -- the lines -----------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """One least-squares line of a shift (ImageNet-A's has two).

    Attributes:
        line: slope, intercept, r and n on the logit axes
        models: the models fitted, in the table's order
        band: its bootstrap band over the shift's grid (None when not drawn)
        below: the piece serves clean top-1 at or below this (None: all)
    """

    line: LogitLine
    models: Tuple[str, ...]
    band: Optional[Band] = None
    below: Optional[float] = None


@dataclass(frozen=True)
class ShiftLine:
    """A shift's line: one piece, or two broken at the shift's pivot.

    Attributes:
        shift: the shift
        pieces: the lines, the one below the pivot first
        shown: the models the testbed's figure shows (all types), whose
            clean range sets the default grid
        source: where the points come from, in words
    """

    shift: Shift
    pieces: Tuple[Piece, ...]
    shown: Tuple[str, ...] = ()
    source: str = "testbed"

    def _single(self) -> LogitLine:
        if len(self.pieces) != 1:
            raise ValueError(f"{self.shift.title}'s line breaks at {self.shift.pivot}: "
                             "read each of `pieces`")
        return self.pieces[0].line

    @property
    def slope(self) -> float:
        return self._single().slope

    @property
    def intercept(self) -> float:
        return self._single().intercept

    @property
    def r(self) -> float:
        return self._single().r

    @property
    def n(self) -> int:
        """The models fitted, over all pieces."""
        return sum(p.line.n for p in self.pieces)

    @property
    def models(self) -> Tuple[str, ...]:
        return tuple(m for p in self.pieces for m in p.models)

    def predict(self, clean_top1) -> np.ndarray:
        """The line's shift top-1 (percent) at ``clean_top1`` (percent):
        above the pivot the second piece's (``paper_appendix_eff_robust.py``
        lines 41-61)."""
        clean = np.asarray(clean_top1, dtype=np.float64)
        out = self.pieces[0].line.predict(clean)
        if len(self.pieces) == 2:
            out = np.where(clean > self.pieces[0].below, self.pieces[1].line.predict(clean), out)
        return out

    def band(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(grid, lower, upper)`` on the logit axes: each piece's band on
        its side of the pivot (``plotting/plotter.py`` lines 1128, 1152)."""
        first = self.pieces[0].band
        if first is None:
            raise ValueError("this line was fitted without its band: pass `band=True`")
        lower, upper = first.lower, first.upper
        if len(self.pieces) == 2:
            second = self.pieces[1].band
            left = first.grid < logit(self.pieces[0].below)
            lower = np.where(left, first.lower, second.lower)
            upper = np.where(left, first.upper, second.upper)
        return first.grid, lower, upper

    def to_dict(self) -> dict:
        """The line's numbers, JSON-ready (the band's as lists)."""
        out = {"shift": self.shift.name, "x_column": self.shift.x_column,
               "y_column": self.shift.y_column, "source": self.source, "n": self.n,
               "pieces": [{"slope": p.line.slope, "intercept": p.line.intercept, "r": p.line.r,
                           "n": p.line.n, "below": p.below,
                           "slope_interval": p.band.slope_interval if p.band else None,
                           "intercept_interval": p.band.intercept_interval if p.band else None}
                          for p in self.pieces]}
        if self.pieces[0].band is not None:
            grid, lower, upper = self.band()
            out["band"] = {"grid": grid.tolist(), "lower": lower.tolist(), "upper": upper.tolist(),
                           "resamples": self.pieces[0].band.resamples,
                           "seed": self.pieces[0].band.seed, "level": self.pieces[0].band.level}
        return out


def _selection(shift: Shift) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Tuple[str, ...]]:
    """The testbed's models with both columns, and which the figure shows
    and the line fits (``show_in_plot`` and ``use_for_line_fit`` of the
    shift's script)."""
    table = testbed_table()
    x, y = table.column(shift.x_column), table.column(shift.y_column)
    keep = ~(np.isnan(x) | np.isnan(y))
    names = tuple(m for m, k in zip(table.models, keep) if k)
    x, y = x[keep], y[keep]
    types = model_types()[shift.types]
    lower = [m.lower() for m in names]
    shown = np.array([("subsample" not in m and m not in shift.excluded) for m in lower]) & (
        x >= shift.shown_from)
    standard = np.array([types[m] == "STANDARD" and not any(p in m.lower() for p in shift.not_standard)
                         for m in names])
    fitted = shown & standard & np.array(["aws" not in m and "batch64" not in m for m in lower])
    return x, y, shown, fitted, names


def _grid(shift: Shift, x_shown: np.ndarray, grid: Optional[Sequence[float]]) -> np.ndarray:
    if grid is not None:
        return logit(np.asarray(grid, dtype=np.float64))
    return logit_grid(x_shown.min() - shift.pad[0], x_shown.max() + shift.pad[1])


def _pieces(shift: Shift, x: np.ndarray, y: np.ndarray, fitted: np.ndarray,
            names: Sequence[str], grid: Optional[np.ndarray]) -> Tuple[Piece, ...]:
    if shift.pivot is None:
        masks = [(fitted, None)]
    else:
        masks = [(fitted & (x < shift.pivot), shift.pivot), (fitted & (x > shift.pivot), None)]
    out = []
    for mask, below in masks:
        line = fit_logit_line(x[mask], y[mask])
        band = bootstrap_band(x[mask], y[mask], grid) if grid is not None else None
        out.append(Piece(line, tuple(n for n, k in zip(names, mask) if k), band, below))
    return tuple(out)


@lru_cache(maxsize=64)
def _fit(name: str, grid: Optional[Tuple[float, ...]], band: bool) -> ShiftLine:
    shift = SHIFTS[name]
    x, y, shown, fitted, names = _selection(shift)
    g = _grid(shift, x[shown], grid) if band else None
    shown_names = tuple(n for n, k in zip(names, shown) if k)
    return ShiftLine(shift, _pieces(shift, x, y, fitted, names, g), shown_names,
                     f"testbed {TESTBED_COMMIT[:7]}")


def fit_line(shift: Union[str, Shift], grid: Optional[Sequence[float]] = None,
             band: bool = True) -> ShiftLine:
    """A shift's line, fitted as the testbed fits it.

    The models with both columns; the figure's (no ``subsample`` in the
    name, clean top-1 at least the shift's threshold, ImageNet-A without
    ResNet-50); of those, the standard ones without ``aws`` or ``batch64``
    in the name make the line (``use_for_line_fit``, e.g.
    ``paper_nat_shift_imagenetv2.py`` lines 20-29), fitted by least squares
    on logit axes with its 1,000-resample band (``plotting/plotter.py``
    lines 151-173).

    Args:
        shift: a key of :data:`SHIFTS` (or an alias)
        grid: clean top-1 values (percent) for the band; None: the
            testbed's, 200 points evenly spaced on the logit axis from the
            lowest shown model's clean top-1 minus 1 point to the highest's
            plus 0.5 (0.8 for ImageNet-A)
        band: False skips the bootstrap (the line alone)
    """
    s = get_shift(shift)
    return _fit(s.name, None if grid is None else tuple(float(v) for v in grid), band)


def effective_robustness(shift: Union[str, Shift], clean_top1, shift_top1):
    """Shift top-1 minus the shift's line at the same clean top-1, in points
    (``paper_eff_robust_corruptions.py`` lines 41-46): positive above the
    line. ``clean_top1`` is on the shift's ``x_column`` (class-matched for
    ObjectNet, ImageNet-A and -R); both in percent; a float for floats."""
    line = fit_line(shift, band=False)
    out = np.asarray(shift_top1, dtype=np.float64) - line.predict(clean_top1)
    return float(out) if out.ndim == 0 else out


def testbed_model(model: str) -> Dict[str, dict]:
    """Each shift's numbers for one testbed model: ``{shift: {"clean_top1",
    "top1", "predicted_top1", "effective_robustness", "x_column",
    "y_column", "in_fit"}}``, percent and points; a shift whose columns the
    model lacks is left out."""
    table = testbed_table()
    if model not in table.models:
        raise _unknown_model(model)
    i = table.models.index(model)
    out = {}
    for name, shift in SHIFTS.items():
        x, y = table.column(shift.x_column)[i], table.column(shift.y_column)[i]
        if np.isnan(x) or np.isnan(y):
            continue
        line = fit_line(shift, band=False)
        predicted = float(line.predict(x))
        out[name] = {"clean_top1": float(x), "top1": float(y), "predicted_top1": predicted,
                     "effective_robustness": float(y) - predicted,
                     "x_column": shift.x_column, "y_column": shift.y_column,
                     "in_fit": model in line.models}
    return out


# -- the zero-shot line ------------------------------------------------------


@lru_cache(maxsize=1)
def open_clip_rows() -> Tuple[Tuple[str, str, Dict[str, float]], ...]:
    """open_clip's table (``data/published_accuracy/open_clip``): ``(name,
    pretrained, {column: top-1 percent})`` per row, in the file's order."""
    out = []
    with open(OPEN_CLIP_TABLE, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            values = {k: 100 * float(v) for k, v in row.items()
                      if k not in ("name", "pretrained") and v not in ("", None)}
            out.append((row["name"], row["pretrained"], values))
    return tuple(out)


def zero_shot_shifts() -> Tuple[str, ...]:
    """The shifts open_clip's table has both columns of."""
    return tuple(n for n, s in SHIFTS.items() if s.zero_shot_column)


@lru_cache(maxsize=64)
def _zero_shot(name: str, band: bool, grid: Optional[Tuple[float, ...]] = None) -> ShiftLine:
    shift = SHIFTS[name]
    rows = [(f"{n}/{p}", v[OPEN_CLIP_CLEAN], v[shift.zero_shot_column]) for n, p, v in open_clip_rows()
            if OPEN_CLIP_CLEAN in v and shift.zero_shot_column in v
            and v[OPEN_CLIP_CLEAN] >= shift.shown_from]
    names = tuple(r[0] for r in rows)
    x = np.array([r[1] for r in rows])
    y = np.array([r[2] for r in rows])
    if band:
        tx, _, t_shown, _, _ = _selection(shift)
        grid = _grid(shift, tx[t_shown], grid)
    line = fit_logit_line(x, y)
    piece = Piece(line, names, bootstrap_band(x, y, grid) if band else None)
    return ShiftLine(shift, (piece,), names, "open_clip zero-shot results")


def zero_shot_line(shift: Union[str, Shift], band: bool = True,
                   grid: Optional[Sequence[float]] = None) -> ShiftLine:
    """The line of open_clip's zero-shot models (CLIP and its successors:
    ``openclip_results.csv``) on a shift whose clean column matches the
    testbed's (ImageNetV2 matched frequency, ImageNet-Sketch: x is full
    ImageNet val, ``ImageNet 1k``; the table's ImageNet-A, -R and ObjectNet
    columns have no class-matched clean column beside them). Fitted as
    :func:`fit_line` fits: the rows at or above the testbed line's clean
    threshold (55 %), in the file's order, logit axes, the band on the
    testbed line's grid (``grid``: clean top-1 values in percent instead)."""
    s = get_shift(shift)
    if not s.zero_shot_column:
        raise ImageNetXError(f"open_clip's table has no zero-shot line for '{s.name}': "
                             f"use one of {', '.join(zero_shot_shifts())}")
    return _zero_shot(s.name, band, None if grid is None else tuple(float(v) for v in grid))
