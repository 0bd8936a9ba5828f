"""Reducers: what is reported per slice, as typed, JSON-ready results.

:class:`ErrorRatios` is the ImageNet-X report: per model, accuracy, the
worst slice, the worst-100-classes accuracy and calibration, and per slice
accuracy, error ratio with a bootstrap interval and a few-images flag,
share of mistakes and calibration; optionally the same within groups of
images (e.g. meta-classes). Other reducers (corruption error, shape bias)
take the same :class:`Scored` inputs.
"""

import math
from dataclasses import dataclass
from typing import Dict, Optional, Sequence

import numpy as np

from imagenetx.metrics.calibration import calibration_error, slice_calibration_errors
from imagenetx.metrics.slices import (
    MIN_RELIABLE_N,
    WORST_CLASSES_K,
    SliceTable,
    group_tables,
    prevalence_shift,
    slice_table,
    worst_classes_accuracies,
)
from imagenetx.metrics.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    INTERVAL_LEVEL,
    to_json,
)


@dataclass(frozen=True)
class Scored:
    """One model's images, scored: the input of a reducer.

    Attributes:
        correct: ``(n,)`` bool, whether each image is classified correctly
        membership: ``(n, k)`` bool, image x slice
        classes: ``(n,)`` true class index of each image (for the worst
            classes)
        confidence: ``(n,)`` confidence of the prediction, or None
        group_ids: ``(n,)`` group index of each image, or None
    """

    correct: np.ndarray
    membership: np.ndarray
    classes: np.ndarray
    confidence: Optional[np.ndarray] = None
    group_ids: Optional[np.ndarray] = None


@dataclass(frozen=True)
class SliceStats:
    """One slice of one model (floats are NaN where undefined)."""

    n: int
    correct: int
    accuracy: float
    error_ratio: float
    ci_low: float
    ci_high: float
    few_images: bool
    share_of_mistakes: float = math.nan
    share_of_images: float = math.nan
    prevalence_shift: float = math.nan
    ece: float = math.nan

    def to_dict(self) -> dict:
        return {k: to_json(v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class TableSummary:
    """One model over a set of images: totals and its slices."""

    n: int
    correct: int
    accuracy: float
    worst_slice: Optional[str]
    worst_slice_accuracy: float
    worst_reliable_slice: Optional[str]
    slices: Dict[str, SliceStats]

    @classmethod
    def from_table(cls, table: SliceTable, extra: dict = None, **more):
        """From a :class:`SliceTable`; ``extra`` maps further
        :class:`SliceStats` attributes to ``(k,)`` arrays."""
        slices = {}
        for i, row in enumerate(table.rows()):
            name = row.pop("slice")
            for key, values in (extra or {}).items():
                row[key] = float(values[i])
            slices[name] = SliceStats(**row)
        return cls(
            n=int(table.n_total), correct=int(table.correct_total),
            accuracy=table.accuracy, worst_slice=table.worst_slice,
            worst_slice_accuracy=table.worst_slice_accuracy,
            worst_reliable_slice=table.worst_reliable_slice,
            slices=slices, **more,
        )

    def to_dict(self) -> dict:
        """JSON-ready."""
        out = {
            "n": self.n, "correct": self.correct,
            "accuracy": to_json(self.accuracy),
            "worst_slice": self.worst_slice,
            "worst_slice_accuracy": to_json(self.worst_slice_accuracy),
            "worst_reliable_slice": self.worst_reliable_slice,
        }
        # JSON keys are text: a field's int or bool values become "3", "True"
        out["slices"] = {str(k): v.to_dict() for k, v in self.slices.items()}
        return out


@dataclass(frozen=True)
class ModelSummary(TableSummary):
    """One model: :class:`TableSummary` plus the toolkit's model columns and,
    optionally, the same table within each group of images."""

    worst_classes: float = math.nan
    worst_classes_k: int = WORST_CLASSES_K
    ece: float = math.nan
    groups: Optional[Dict[str, TableSummary]] = None

    def to_dict(self) -> dict:
        out = super().to_dict()
        out[f"worst_{self.worst_classes_k}_classes"] = to_json(self.worst_classes)
        out["ece"] = to_json(self.ece)
        if self.groups is not None:
            out["groups"] = {str(g): t.to_dict() for g, t in self.groups.items()}
        return out


@dataclass(frozen=True)
class ErrorRatios:
    """The error-ratio reducer (see the module docstring).

    Attributes:
        intervals: whether to compute bootstrap intervals
        resamples, seed, level: the bootstrap settings
        k_worst: the number of worst classes
    """

    intervals: bool = True
    resamples: int = BOOTSTRAP_RESAMPLES
    seed: int = BOOTSTRAP_SEED
    level: float = INTERVAL_LEVEL
    k_worst: int = WORST_CLASSES_K

    name = "error_ratio"

    def reduce(self, models: Dict[str, Scored], names: Sequence[str],
               group_names: Optional[Sequence[str]] = None) -> Dict[str, ModelSummary]:
        """Summarizes each model over its own images.

        Args:
            models: ``{field: Scored}``
            names: the slice names (columns of each membership matrix)
            group_names: the group names, when each :class:`Scored` has
                ``group_ids`` and per-group tables are wanted

        Returns:
            ``{field: ModelSummary}``, in the order of ``models``
        """
        worst = self.worst_classes(models)
        return {m: self.summarize(s, names, group_names, worst[m])
                for m, s in models.items()}

    def worst_classes(self, models: Dict[str, Scored]) -> Dict[str, float]:
        """Each model's worst-classes accuracy (computed over all the models
        at once: the toolkit breaks ties over their concatenation)."""
        # the toolkit sorts all its models' class accuracies together, in the
        # order of its groupby: by model name
        ordered = sorted(models)
        return dict(zip(ordered, (float(w) for w in worst_classes_accuracies(
            [models[m].correct for m in ordered],
            [models[m].classes for m in ordered], self.k_worst,
        ))))

    def summarize(self, s: Scored, names: Sequence[str],
                  group_names: Optional[Sequence[str]], worst: float) -> "ModelSummary":
        """One model's summary, given its :meth:`worst_classes` accuracy."""
        boot = dict(resamples=self.resamples, seed=self.seed, level=self.level)
        table = slice_table(s.correct, s.membership, names,
                            intervals=self.intervals, **boot)
        share_wrong, share_all, shift = prevalence_shift(s.correct, s.membership)
        extra = {"share_of_mistakes": share_wrong,
                 "share_of_images": share_all, "prevalence_shift": shift}
        conf = s.confidence
        ece = math.nan
        if conf is not None and len(conf) and not np.isnan(conf).any():
            extra["ece"] = slice_calibration_errors(s.correct, conf, s.membership)
            ece = calibration_error(s.correct, conf)
        groups = None
        if group_names is not None:
            tables = group_tables(s.correct, s.membership, names, s.group_ids,
                                  len(group_names), intervals=self.intervals,
                                  **boot)
            groups = {g: TableSummary.from_table(t)
                      for g, t in zip(group_names, tables)}
        return ModelSummary.from_table(
            table, extra, worst_classes=worst,
            worst_classes_k=self.k_worst, ece=ece, groups=groups,
        )


__all__ = ["ErrorRatios", "ModelSummary", "Scored", "SliceStats",
           "TableSummary", "MIN_RELIABLE_N", "to_json"]
