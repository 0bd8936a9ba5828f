"""Probe results of a prediction field: accuracy per level, spectral bias,
corruption errors, and the "right on clean, wrong under this level" views.

The columns come from the probe field :func:`imagenetx.probes.run.run_probe`
writes (``<field>_<probe>``, level keys in its info) and the ground truth's
``class_index``; the arithmetic is :mod:`imagenetx.metrics.spectral` and
:mod:`imagenetx.metrics.corruption`.
"""

from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.critical_band import CriticalBandFit, critical_band_levels, fit_critical_band
from imagenetx.metrics.corruption import (
    CORRUPTIONS,
    SEVERITIES,
    CorruptionErrors,
    corruption_errors,
)
from imagenetx.metrics.spectral import SpectralBias, fractions_of_clean, spectral_bias
from imagenetx.probes.base import CLEAN, PROBES
from imagenetx.probes.stored import probe_field, probe_info
from imagenetx.store.datasets import get_dataset
from imagenetx.probes.spectral_levels import HIGH, LOW, parse_level


@dataclass
class ProbeResults:
    """One prediction field under one probe.

    Attributes:
        dataset: the dataset's name
        field: the prediction field
        probe: the probe's name
        probe_field: the field holding the results
        model: the model spec that was run
        levels: the level keys, in stored order
        n: images scored per level (ground truth known, level run)
        correct: images right per level
        spectral: LPP, HPP and spectral bias (spectral probe)
        corruption: errors, CE, mCE, relative mCE (corruption probe)
        critical_band: the fitted band, accuracy as a fraction of clean
            (critical-band probe, once all its 29 levels have run)
    """

    dataset: str
    field: str
    probe: str
    probe_field: str
    model: str
    levels: List[str]
    n: Dict[str, int]
    correct: Dict[str, int]
    spectral: Optional[SpectralBias] = None
    corruption: Optional[CorruptionErrors] = None
    critical_band: Optional[CriticalBandFit] = None

    def accuracy(self, level: str) -> float:
        n = self.n.get(level, 0)
        return self.correct[level] / n if n else float("nan")

    def fraction_of_clean(self, level: str) -> float:
        """Accuracy under ``level`` as a fraction of clean accuracy."""
        clean = self.accuracy(CLEAN) if CLEAN in self.n else float("nan")
        return self.accuracy(level) / clean if clean else float("nan")

    def to_dict(self) -> dict:
        """JSON-ready (NaN becomes None): ``{"dataset", "field", "probe",
        "probe_field", "model", "levels": [{"level", "n", "correct",
        "accuracy", "fraction_of_clean"}], "spectral": {...} or None,
        "corruption": {...} or None}``."""
        def num(x):
            return float(x) if x is not None and np.isfinite(x) else None

        return {
            "dataset": self.dataset, "field": self.field, "probe": self.probe,
            "probe_field": self.probe_field, "model": self.model,
            "levels": [{"level": lv, "n": self.n[lv], "correct": self.correct[lv],
                        "accuracy": num(self.accuracy(lv)),
                        "fraction_of_clean": num(self.fraction_of_clean(lv))}
                       for lv in self.levels],
            "spectral": self.spectral.to_dict() if self.spectral else None,
            "corruption": self.corruption.to_dict() if self.corruption else None,
            "critical_band": (self.critical_band.to_dict()
                              if self.critical_band else None),
        }


def _columns(samples, field: str, probe: str, gt_field: str):
    """``(view, info, ids, predictions (n, levels) with -1 where not run,
    ground truth (n,) with -1 where unknown)``."""
    samples = get_dataset(samples)
    if probe not in PROBES:
        raise PROBES.unknown(probe)
    info = probe_info(samples, field, probe)
    pfield = probe_field(field, probe)
    if info is None:
        raise ImageNetXError(
            f"No '{probe}' results for field '{field}' ('{pfield}' is absent): "
            f"run the probe first (`run_probe(probe='{probe}', field='{field}')`)")
    dataset = samples._dataset
    gt_path = f"{gt_field}.class_index"
    ids, lists, gt = (samples.values(["id", pfield, gt_path])
                      if dataset.has_field(gt_field) else ([], [], []))
    if not any(g is not None for g in gt):
        raise ImageNetXError(
            f"No ground truth '{gt_path}' in these samples: load the dataset with "
            "`Benchmark.load()` or pass `gt_field` (a fo.Classification with class_index)")
    levels = list(info["levels"])
    pred = np.full((len(ids), len(levels)), -1, dtype=np.int64)
    for i, values in enumerate(lists):
        for j, v in enumerate((values or [])[:len(levels)]):
            if v is not None and v >= 0:
                pred[i, j] = v
    truth = np.array([-1 if g is None else g for g in gt], dtype=np.int64)
    return samples, info, ids, pred, truth


def probe_results(samples, field: str, probe: str,
                  gt_field: str = "ground_truth") -> ProbeResults:
    """Accuracy per level of a field's probe results, with the probe's own
    summary (spectral bias; CE, mCE, relative mCE).

    Args:
        samples: a dataset, view, or dataset name
        field: the prediction field the probe ran for
        probe: ``spectral``, ``corruption``, ``critical_band``
        gt_field ("ground_truth"): the ground truth ``fo.Classification``

    Raises:
        ImageNetXError: for an unknown probe, a probe not run on ``field``,
            or a ground truth without ``class_index``
    """
    view, info, _, pred, truth = _columns(samples, field, probe, gt_field)
    levels = list(info["levels"])
    known = truth >= 0
    n, correct = {}, {}
    for j, level in enumerate(levels):
        ran = known & (pred[:, j] >= 0)
        n[level] = int(ran.sum())
        correct[level] = int((ran & (pred[:, j] == truth)).sum())
    result = ProbeResults(view._dataset.name, field, probe, probe_field(field, probe),
                          info.get("model"), levels, n, correct)
    if probe == "spectral":
        result.spectral = _spectral(result)
    elif probe == "corruption":
        result.corruption = _corruption(result)
    elif probe == "critical_band":
        result.critical_band = _critical_band(result)
    return result


def _spectral(result: ProbeResults) -> SpectralBias:
    bands = {LOW: {}, HIGH: {}}
    for level in result.levels:
        if level != CLEAN:
            kind, cutoff = parse_level(level)
            bands[kind][cutoff] = result.accuracy(level)
    clean = result.accuracy(CLEAN) if CLEAN in result.n else float("nan")
    return spectral_bias(fractions_of_clean(bands[LOW], clean),
                         fractions_of_clean(bands[HIGH], clean))


def _corruption(result: ProbeResults) -> Optional[CorruptionErrors]:
    names = [c for c in CORRUPTIONS
             if any(f"{c}:{s}" in result.n for s in SEVERITIES)]
    if not names or CLEAN not in result.n:
        return None
    errors = np.full((len(names), len(SEVERITIES)), np.nan)
    for i, c in enumerate(names):
        for j, s in enumerate(SEVERITIES):
            level = f"{c}:{s}"
            if result.n.get(level):
                errors[i, j] = 1 - result.accuracy(level)
    return corruption_errors(errors, 1 - result.accuracy(CLEAN), names)


def _critical_band(result: ProbeResults) -> Optional[CriticalBandFit]:
    """The fit, once every level has images scored and the clean accuracy is
    above 0 (else None: the per-level table is all there is)."""

    levels = critical_band_levels()
    if any(not result.n.get(level) for level in levels) or not result.correct[CLEAN]:
        return None
    return fit_critical_band({lv: result.accuracy(lv) for lv in levels}, levels)


def probe_mistakes_view(samples, field: str, probe: str, level: str,
                        gt_field: str = "ground_truth"):
    """The samples ``field``'s model gets right on the clean image and wrong
    under ``level`` of ``probe``.

    Args:
        samples: a dataset, view, or dataset name
        field: the prediction field the probe ran for
        probe: the probe's name
        level: one of its stored level keys, e.g. ``"low:0.3"``, ``"fog:5"``

    Returns:
        a view of those samples

    Raises:
        ImageNetXError: for a probe not run, an unknown level, ``clean``,
            or a probe without a clean level
    """
    view, info, ids, pred, truth = _columns(samples, field, probe, gt_field)
    levels = list(info["levels"])
    if level not in levels or level == CLEAN:
        raise ImageNetXError(
            f"Unknown level '{level}' of '{probe}' for '{field}': use one of "
            f"{', '.join(lv for lv in levels if lv != CLEAN)}")
    if CLEAN not in levels:
        raise ImageNetXError(
            f"'{probe}' results for '{field}' have no clean level to compare with")
    clean, under = pred[:, levels.index(CLEAN)], pred[:, levels.index(level)]
    keep = (truth >= 0) & (clean == truth) & (under >= 0) & (under != truth)
    return view.select([i for i, k in zip(ids, keep) if k], ordered=True)
