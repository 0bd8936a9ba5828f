"""Calibration under shift: per ImageNet-X factor and per shift, each
scheme named, before and after temperature scaling.

The temperature is fitted (:func:`imagenetx.metrics.temperature.
fit_temperature`) on a seeded held-out part of the clean ImageNet val
images only, never on the images it is scored on nor on a shift (Guo et al.
2017; Minderer et al. 2021). The clean rows count the other val images; each
shift's rows all of its images. Each row: the expected calibration error
with equal-width and with equal-mass bins, Hendrycks' RMS calibration error
(bins of 100 images), with and without the temperature. Without stored
logits only the stored confidences are scored.
"""

import os
from typing import Dict, Mapping, Optional

import numpy as np
from scipy.special import softmax

from imagenetx.analysis.columns import read_columns
from imagenetx.analysis.engine import prepare
from imagenetx.analysis.populations import val_images
from imagenetx.analysis.shifts import read_shift
from imagenetx.benchmarks.ood.layouts import SEVERITIES
from imagenetx.benchmarks.ood.tuning import check_tunable
from imagenetx.classes.spaces import ClassSubset
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.calibration import (
    ECE_BINS,
    EQUAL_MASS_BINS,
    RMS_BIN_SIZE,
    expected_calibration_error,
    reliability_bins,
    rms_calibration_error,
)
from imagenetx.metrics.stats import to_json
from imagenetx.metrics.temperature import fit_temperature, scaled_confidence
from imagenetx.store.datasets import get_dataset

#: the share of the clean val images the temperature is fitted on
HOLDOUT = 0.2
#: the seed of that split
HOLDOUT_SEED = 0

#: said where the field has no stored logits
NO_LOGITS = ("no temperature: it is fitted on logits, and '{field}' stores none; "
             "predict again with `predict(logits=True)`")


def calibration_row(correct: np.ndarray, confidence: np.ndarray,
                    scaled: Optional[np.ndarray] = None, n_bins: int = ECE_BINS,
                    mass_bins: int = EQUAL_MASS_BINS, rms_bin_size: int = RMS_BIN_SIZE,
                    reliability: bool = False) -> dict:
    """One row of the readout: ``{"n", "accuracy", "confidence",
    "ece_equal_width", "ece_equal_mass", "rms_calibration_error",
    "scaled": {the same three and "confidence"} | None}``; the RMS error is
    None under ``rms_bin_size`` images; ``reliability``: also the
    equal-width reliability bins (before and after)."""
    correct = np.asarray(correct, bool)
    n = int(correct.size)

    def scores(conf):
        if not n:
            return {"confidence": None, "ece_equal_width": None, "ece_equal_mass": None,
                    "rms_calibration_error": None}
        return {"confidence": float(np.mean(conf)),
                "ece_equal_width": expected_calibration_error(correct, conf, n_bins,
                                                              "equal-width"),
                "ece_equal_mass": expected_calibration_error(correct, conf, mass_bins,
                                                             "equal-mass"),
                "rms_calibration_error": (rms_calibration_error(correct, conf, rms_bin_size)
                                          if n >= rms_bin_size else None)}

    row = {"n": n, "accuracy": float(correct.mean()) if n else None, **scores(confidence),
           "scaled": None if scaled is None else scores(scaled)}
    if reliability and n:
        row["reliability"] = reliability_bins(correct, confidence, n_bins).to_dict()
        if scaled is not None:
            row["scaled"]["reliability"] = reliability_bins(correct, scaled, n_bins).to_dict()
    return row


def _logit_matrix(values) -> Optional[np.ndarray]:
    """Stored logits as an ``(n, k)`` matrix; None where any is missing."""
    if not len(values) or any(v is None for v in values):
        return None
    return np.stack([np.asarray(v, dtype=np.float64) for v in values])


def holdout_split(names, fraction: float = HOLDOUT, seed: int = HOLDOUT_SEED) -> np.ndarray:
    """``(n,)`` bool: the held-out images, a seeded ``fraction`` of them
    drawn over their file names in sorted order (so the split does not
    depend on the database's order)."""
    if not 0 < fraction < 1:
        raise ImageNetXError(f"`holdout={fraction}`: the held-out share lies between 0 and 1")
    names = np.asarray(names)
    order = np.argsort(names, kind="stable")
    held = np.zeros(names.size, bool)
    held[order[np.random.RandomState(seed).permutation(names.size)[:round(fraction * names.size)]]] = True
    return held


def calibration_readout(dataset, pred_field: str, shifts: Mapping[str, str] = None,
                        n_bins: int = ECE_BINS, mass_bins: int = EQUAL_MASS_BINS,
                        rms_bin_size: int = RMS_BIN_SIZE, holdout: float = HOLDOUT,
                        seed: int = HOLDOUT_SEED, slicing: str = "top_factor",
                        gt_field: str = "ground_truth") -> dict:
    """Calibration of a field per ImageNet-X factor (on ImageNet val) and per
    shift, before and after a temperature fitted on held-out clean images.

    Args:
        dataset: the ImageNet val dataset (ImageNet-X-tagged), view or name
        pred_field: the prediction field, the same name on every dataset
        shifts (None): ``{shift: dataset}`` as in
            :func:`imagenetx.analysis.effective_robustness.field_robustness`
        n_bins (15): equal-width bins; mass_bins (100): equal-mass bins
            (Minderer et al.); rms_bin_size (100): images per RMS bin
            (Hendrycks)
        holdout (0.2), seed (0): the clean share the temperature is
            fitted on, and the seed of that split (:func:`holdout_split`)
        slicing ("top_factor"): the ImageNet-X slicing of the clean rows

    Returns:
        ``{"field", "dataset", "temperature", "note", "holdout": {"fraction",
        "seed", "n"}, "bins": {...}, "slicing", "clean": {"all": row,
        "slices": {slice: row}}, "shifts": {shift: row (ImageNet-C also
        "severity": {s: row})}, "datasets": {shift: dataset}}`` with rows of
        :func:`calibration_row`
    """
    val = get_dataset(dataset)
    check_tunable(val)  # the temperature is fitted on it (ObjectNet's licence forbids)
    gt_path = f"{gt_field}.class_index"
    logits_path = f"{pred_field}.logits"
    if not val.has_field(pred_field):
        raise ImageNetXError(
            f"Dataset '{val._dataset.name}' has no field '{pred_field}': name another "
            "`pred_field`")
    # the split and the fit: every val image with a ground truth and a prediction
    cols = read_columns(val_images(val), ["filepath", gt_path, f"{pred_field}.class_index",
                                          logits_path], ids=True)
    has = np.array([g is not None and c is not None for g, c in
                    zip(cols[gt_path], cols[f"{pred_field}.class_index"])], bool)
    if not has.any():
        raise ImageNetXError(
            f"Dataset '{val._dataset.name}' has no ImageNet val image with a ground truth "
            f"and a '{pred_field}' prediction: pass the ImageNet val dataset as `dataset`")
    ids = np.array(cols["id"])[has]
    held = holdout_split([os.path.basename(p) for p, k in zip(cols["filepath"], has) if k],
                         holdout, seed)
    logits = _logit_matrix([v for v, k in zip(cols[logits_path], has) if k])
    temperature, note = None, None
    if logits is None:
        note = NO_LOGITS.format(field=pred_field)
    else:
        labels = np.array([c for c, k in zip(cols[gt_path], has) if k], np.int64)
        temperature = fit_temperature(logits[held], labels[held])
    held_ids = set(ids[held].tolist())
    options = dict(n_bins=n_bins, mass_bins=mass_bins, rms_bin_size=rms_bin_size)

    # the clean rows: the other val images, per slice
    p = prepare(val, [pred_field], slicing=slicing, gt_field=gt_field, intervals=False,
                ids=True, extra_paths=[logits_path])
    keep = p.counted[pred_field] & ~np.isin(np.array(p.ids), list(held_ids))
    correct, conf = p.correct[pred_field], p.confidence[pred_field]
    scaled = None
    if temperature is not None:
        rows = _logit_matrix([v for v, k in zip(p.columns[logits_path], keep) if k])
        scaled = np.full(conf.shape, np.nan)
        scaled[keep] = scaled_confidence(rows, temperature)[1]
    clean = {"all": calibration_row(correct[keep], conf[keep],
                                    None if scaled is None else scaled[keep],
                                    reliability=True, **options),
             "slices": {}}
    for j, value in enumerate(p.slicing.values):
        m = keep & p.membership[:, j]
        clean["slices"][str(value)] = calibration_row(
            correct[m], conf[m], None if scaled is None else scaled[m], **options)

    out_shifts: Dict[str, dict] = {}
    datasets: Dict[str, str] = {}
    for key, name in (shifts or {}).items():
        data = read_shift(name, pred_field, key, gt_field, extra_paths=[logits_path])
        q = data.prepared
        before, after = _shift_confidence(q, pred_field, logits_path, temperature)
        for shift, mask in data.masks.items():
            out_shifts[shift] = calibration_row(
                q.correct[pred_field][mask], before[mask],
                None if after is None else after[mask], reliability=True, **options)
            datasets[shift] = data.dataset
            if shift == "imagenet-c":
                severity = np.array([-1 if v is None else int(v) for v in q.columns["severity"]])
                out_shifts[shift]["severity"] = {
                    str(s): calibration_row(q.correct[pred_field][mask & (severity == s)],
                                            before[mask & (severity == s)],
                                            None if after is None
                                            else after[mask & (severity == s)], **options)
                    for s in SEVERITIES if (mask & (severity == s)).any()}
    return to_json({
        "field": pred_field, "dataset": val._dataset.name, "temperature": temperature,
        "note": note, "holdout": {"fraction": holdout, "seed": seed, "n": int(held.sum())},
        "bins": {"equal_width": n_bins, "equal_mass": mass_bins, "rms_bin_size": rms_bin_size},
        "slicing": p.slicing.name, "clean": clean, "shifts": out_shifts, "datasets": datasets})


def _shift_confidence(q, pred_field: str, logits_path: str, temperature: Optional[float]):
    """``(confidence, scaled confidence | None)`` of every row of a shift:
    the stored confidence, or (a class subset's label space, ImageNet-A/-R)
    the softmax over the subset's logits, the output the field is scored on."""
    values, counted = q.columns[logits_path], q.counted[pred_field]
    logits = None
    if all(v is not None for v, k in zip(values, counted) if k):
        # rows without a prediction have no logits either: zeros, never counted
        width = len(next(v for v in values if v is not None))
        logits = np.stack([np.zeros(width) if v is None else np.asarray(v, np.float64)
                           for v in values])
    space = q.label_space
    if isinstance(space, ClassSubset):
        sub = logits[:, space.valid]
        before = softmax(sub, axis=1).max(axis=1)
        after = None if temperature is None else softmax(sub / temperature, axis=1).max(axis=1)
        return before, after
    before = q.confidence[pred_field]
    if temperature is None or logits is None:
        return before, None
    return before, scaled_confidence(logits, temperature)[1]


def reliability_readout(samples, pred_fields, settings=None, n_bins: int = ECE_BINS,
                        **kwargs) -> dict:
    """Each field's reliability diagram over the counted images of a view
    (equal-width bins), its calibration row and its ECE per slice: the
    panel's calibration chart.

    Args:
        samples: a dataset, view, or dataset name
        pred_fields: one prediction field or a list of them
        settings (None): as in :func:`imagenetx.analysis.compute_ratios`,
            with keyword overrides
        n_bins (15): equal-width confidence bins

    Returns:
        ``{"dataset", "slice_title", "n_bins", "models": {field: row of
        :func:`calibration_row` with ``reliability`` and ``slices``:
        {slice: ECE or None}}}``
    """
    kwargs["intervals"] = False
    p = prepare(samples, pred_fields, settings, **kwargs)
    models = {}
    for field in p.correct:
        keep = p.counted[field]
        correct, conf = p.correct[field][keep], p.confidence[field][keep]
        row = calibration_row(correct, conf, n_bins=n_bins, reliability=True)
        members = p.membership[keep]
        row["slices"] = {str(v): (None if not members[:, j].any() else
                                  expected_calibration_error(correct[members[:, j]],
                                                             conf[members[:, j]], n_bins))
                         for j, v in enumerate(p.slicing.values)}
        models[field] = row
    return to_json({"dataset": p.dataset_name, "slice_title": p.slicing.label,
                    "n_bins": n_bins, "models": models})


def confidence_bin(value: str):
    """``(low, high)`` of a bin named ``"low:high"`` (a reliability point's
    id in the panel's chart)."""
    try:
        low, high = (float(v) for v in str(value).split(":"))
    except ValueError:
        raise ImageNetXError(f"Confidence bin '{value}' is not LOW:HIGH, e.g. 0.8:0.9") from None
    return low, high


def confidence_mistakes_view(samples, pred_field: str, low: float, high: float,
                             settings=None, **kwargs):
    """The samples ``pred_field`` gets wrong with a confidence in
    ``(low, high]`` (0 included in the first bin, as
    :func:`~imagenetx.metrics.calibration.reliability_bins` counts it)."""
    kwargs["intervals"] = False
    p = prepare(samples, [pred_field], settings, ids=True, **kwargs)
    conf = p.confidence[pred_field]
    inside = (conf > low) | ((low <= 0) & (conf >= 0))
    wrong = p.counted[pred_field] & ~p.correct[pred_field] & inside & (conf <= high)
    return p.view.select([i for i, w in zip(p.ids, wrong) if w])
