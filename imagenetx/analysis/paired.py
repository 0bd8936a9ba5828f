"""Paired scores of a grouped dataset of edits: each slice against the
same groups' originals, per model, overall and per ImageNet-X factor of the
source image.

Works on any grouped collection that follows the contract of
:mod:`imagenetx.benchmarks.imagenet_e.contract` (ImageNet-E, the editor's
outputs). One query reads the group, slice, ground truth and every
prediction field of the chosen slices (a second, the originals' ImageNet-X
factors, when asked for); the arithmetic is :mod:`imagenetx.metrics.paired`.
"""

from dataclasses import dataclass, field as dc_field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from fiftyone import ViewField as F

from imagenetx.analysis.columns import read_columns
from imagenetx.benchmarks.loading import load_hint
from imagenetx.benchmarks.imagenet_e.contract import (
    EDIT_FIELD,
    GROUP_FIELD,
    LEVEL_FIELD,
    ORIGINAL,
    check_slices,
    require_grouped,
)
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.classes.spaces import int_column
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.paired import PairedTable, paired_counts, paired_table
from imagenetx.metrics.slicing import Slicing
from imagenetx.metrics.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, INTERVAL_LEVEL
from imagenetx.store.datasets import all_slices, get_dataset

#: ImageNet-X slicings of the source image offered ``by_factor``
FACTOR_PATHS = {"factors": ("factors", True), "top_factor": ("top_factor", False)}


@dataclass
class PairedModel:
    """One prediction field's paired scores.

    Attributes:
        slices: one row per edited slice
        factors: ``{slice: rows per factor}``, when asked for
    """

    slices: PairedTable
    factors: Dict[str, PairedTable] = dc_field(default_factory=dict)


@dataclass
class PairedResults:
    """Paired scores of prediction fields on a grouped dataset of edits.

    Attributes:
        dataset: the dataset's name
        original: the original slice
        slices: the edited slices scored, in order
        edits: ``{slice: (edit, edit level)}``, as the samples say
        groups: the groups of the view
        models: ``{field: PairedModel}``
        factor_slicing: ``factors`` or ``top_factor`` when per factor, else
            None
    """

    dataset: str
    original: str
    slices: List[str]
    edits: Dict[str, Tuple[Optional[str], Optional[str]]]
    groups: int
    models: Dict[str, PairedModel]
    factor_slicing: Optional[str] = None

    def to_dict(self) -> dict:
        """JSON-ready: ``{"dataset", "original", "groups", "factor_slicing",
        "slices": [{"slice", "edit", "edit_level"}], "models": {field:
        {"slices": {slice: row}, "factors": {slice: {factor: row}}}}}``;
        a row holds n, top1_original, top1, drop, ci_low, ci_high,
        flip_rate, broken, fixed, p, p_holm."""
        return {
            "dataset": self.dataset,
            "original": self.original,
            "groups": self.groups,
            "factor_slicing": self.factor_slicing,
            "slices": [{"slice": s, "edit": self.edits[s][0],
                        "edit_level": self.edits[s][1]} for s in self.slices],
            "models": {
                f: {"slices": m.slices.to_dict(),
                    "factors": {s: t.to_dict() for s, t in m.factors.items()}}
                for f, m in self.models.items()
            },
        }


@dataclass
class _Columns:
    """The view's samples as group x slice matrices."""

    group_ids: list  # the groups' ObjectIds, in matrix order
    slices: List[str]  # column order: the original first
    truth: np.ndarray  # (g, s) class index, -1 where no sample
    preds: Dict[str, np.ndarray]  # field -> (g, s) class index, -1 where none
    edits: Dict[str, Tuple[Optional[str], Optional[str]]]
    factors: Optional[list] = None  # the originals' factor values, per group


def _group_keys(ids: list) -> np.ndarray:
    """ObjectIds as 12-byte strings: numpy sorts those in C."""
    return np.frombuffer(b"".join(i.binary for i in ids), dtype="S12")


def _read(samples, pred_fields, slices, gt_field, factor_path=None) -> _Columns:
    """Reads the slices (the original first) in one query; the originals'
    factors, when asked for, in a second, smaller one."""
    group_path, slice_path = f"{GROUP_FIELD}._id", f"{GROUP_FIELD}.name"
    gt_path = f"{gt_field}.class_index"
    paths = [group_path, slice_path, gt_path, *(f"{f}.class_index" for f in pred_fields)]
    cols = read_columns(all_slices(samples, slices), paths)
    uniq, first, inverse = np.unique(_group_keys(cols[group_path]), return_index=True,
                                     return_inverse=True)
    names, name_idx = np.unique(np.array(cols[slice_path], dtype=str), return_inverse=True)
    col_of = {s: i for i, s in enumerate(slices)}
    s_idx = np.array([col_of.get(n, -1) for n in names], dtype=np.int64)[name_idx]
    shape = (len(uniq), len(slices))

    def matrix(values):
        out = np.full(shape, -1, dtype=np.int64)
        out[inverse, s_idx] = int_column(values)
        return out

    # one (edit, level) per slice, by the contract: one indexed lookup each
    coll = samples._dataset._sample_collection
    edits = {}
    for s in slices:
        doc = coll.find_one({slice_path: s}, projection={EDIT_FIELD: 1, LEVEL_FIELD: 1})
        edits[s] = (doc.get(EDIT_FIELD), doc.get(LEVEL_FIELD)) if doc else (None, None)
    out = _Columns([cols[group_path][i] for i in first], slices, matrix(cols[gt_path]),
                   {f: matrix(cols[f"{f}.class_index"]) for f in pred_fields}, edits)
    if factor_path:
        originals = read_columns(all_slices(samples, slices[:1]), [group_path, factor_path])
        factors = [None] * len(uniq)
        if originals[group_path]:
            rows = np.searchsorted(uniq, _group_keys(originals[group_path]))
            for g, value in zip(rows.tolist(), originals[factor_path]):
                factors[g] = value
        out.factors = factors
    return out


def _check_fields(samples, pred_fields, gt_field) -> List[str]:
    if isinstance(pred_fields, str):
        pred_fields = [pred_fields]
    fields = list(dict.fromkeys(pred_fields or []))
    if not fields:
        raise ImageNetXError("Pass at least one prediction field")
    name = samples._dataset.name
    if not samples.has_field(f"{gt_field}.class_index"):
        raise ImageNetXError(
            f"Dataset '{name}' has no ground truth '{gt_field}' with a class_index: "
            f"{load_hint('imagenet_e')}, or pass `gt_field`")
    for f in fields:
        if not samples.has_field(f"{f}.class_index"):
            raise ImageNetXError(
                f"Dataset '{name}' has no prediction field '{f}' with a class_index: "
                f"predict it first (`predict(field='{f}')`: it "
                "predicts every slice of a grouped dataset)")
    return fields


def paired_scores(samples, pred_fields: Sequence[str], slices: Sequence[str] = None,
                  by_factor: bool = False, factor_slicing: str = "factors",
                  gt_field: str = "ground_truth", field_name: str = "imagenetx",
                  original: str = ORIGINAL, intervals: bool = True,
                  resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
                  level: float = INTERVAL_LEVEL) -> PairedResults:
    """Each edited slice against the same groups' originals, per field.

    Args:
        samples: a grouped dataset, view or dataset name (the groups of the
            view count)
        pred_fields: prediction fields with ``class_index``
        slices (None): the edited slices to score; None: all but the
            original
        by_factor (False): also per ImageNet-X factor of the source image
            (read from the original's ``imagenetx`` field)
        factor_slicing ("factors"): ``factors`` (all of an image's factors)
            or ``top_factor``
        gt_field ("ground_truth"), field_name ("imagenetx"): the fields
        original ("ori"): the original slice
        intervals (True): compute the paired bootstrap intervals
        resamples, seed, level: the bootstrap settings

    Raises:
        ImageNetXError: for a collection that is not grouped, an unknown
            slice or field, or no factors with ``by_factor``
    """
    samples = get_dataset(samples)
    known = require_grouped(samples, original)
    fields = _check_fields(samples, pred_fields, gt_field)
    edited = check_slices(samples, slices, original) if slices else known[1:]
    edited = [s for s in edited if s != original]
    if not edited:
        raise ImageNetXError(
            f"Dataset '{samples._dataset.name}' has no edited slice beside "
            f"'{original}': nothing to compare")
    factor_path = None
    if by_factor:
        if factor_slicing not in FACTOR_PATHS:
            raise ImageNetXError(
                f"Unknown factor slicing '{factor_slicing}': use factors or top_factor")
        factor_path = f"{field_name}.{FACTOR_PATHS[factor_slicing][0]}"
        if not samples.has_field(factor_path):
            raise ImageNetXError(
                f"Dataset '{samples._dataset.name}' has no ImageNet-X field "
                f"'{factor_path}': tag it first (`tag_dataset()`), or leave out "
                "`by_factor=True`")
    cols = _read(samples, fields, [original, *edited], gt_field, factor_path)
    membership = None
    if by_factor:
        slicing = Slicing(factor_slicing, factor_path, FACTORS,
                          multi=FACTOR_PATHS[factor_slicing][1])
        membership = slicing.membership(cols.factors)
    options = dict(intervals=intervals, resamples=resamples, seed=seed, level=level)
    models = {}
    for f in fields:
        pred = cols.preds[f]
        truth = cols.truth
        answered = (pred >= 0) & (truth >= 0)
        correct = answered & (pred == truth)
        paired = answered[:, 1:] & answered[:, :1]
        args = (correct[:, 0], pred[:, 0], correct[:, 1:], pred[:, 1:], paired)
        model = PairedModel(paired_table(paired_counts(*args), edited, **options))
        if membership is not None:
            by = paired_counts(*args, membership=membership)
            for j, s in enumerate(edited):
                model.factors[s] = paired_table(by.row(j), FACTORS, **options)
        models[f] = model
    edits = {s: cols.edits.get(s, (None, None)) for s in edited}
    return PairedResults(samples._dataset.name, original, edited, edits,
                         len(cols.group_ids), models,
                         factor_slicing if by_factor else None)


def broken_pairs_view(samples, pred_field: str, slice_name: str,
                      gt_field: str = "ground_truth", original: str = ORIGINAL):
    """The original and the edit of the groups whose original ``pred_field``
    gets right and whose ``slice_name`` edit it gets wrong, as one flat view
    (original first in each pair), so the grid shows the pairs.

    Its length is twice the ``broken`` count of :func:`paired_scores`.
    """
    samples = get_dataset(samples)
    require_grouped(samples, original)
    _check_fields(samples, [pred_field], gt_field)
    check_slices(samples, [slice_name], original)
    if slice_name == original:
        raise ImageNetXError(f"'{original}' is the original: pick an edited slice")
    cols = _read(samples, [pred_field], [original, slice_name], gt_field)
    pred, truth = cols.preds[pred_field], cols.truth
    right = (pred >= 0) & (truth >= 0) & (pred == truth)
    answered = (pred >= 0) & (truth >= 0)
    broken = np.flatnonzero(right[:, 0] & answered[:, 1] & ~right[:, 1])
    ids = [str(cols.group_ids[i]) for i in broken]
    # string ids: the view travels to the App as JSON
    return (samples.select_groups(ids)
            .select_group_slices([original, slice_name], _allow_mixed=True)
            .sort_by([(f"{GROUP_FIELD}._id", 1),
                      (F(f"{GROUP_FIELD}.name") != original, 1)]))
