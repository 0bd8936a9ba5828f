"""The typed result of :func:`imagenetx.analysis.compute_ratios`."""

from dataclasses import dataclass
from typing import Dict, Optional

from imagenetx.analysis.settings import Settings
from imagenetx.metrics.slices import MIN_RELIABLE_N
from imagenetx.metrics.slicing import Slicing
from imagenetx.metrics.summary import ModelSummary


@dataclass(frozen=True)
class SliceResults:
    """Per-slice results of several prediction fields over one view.

    Attributes:
        dataset: the dataset's name
        benchmark: the benchmark (its ``name`` and ``title``)
        settings: the settings used
        slicing: the slicing
        correct: the label space's name
        group: the ``by`` slicing, or None
        models: ``{field: ModelSummary}``
    """

    dataset: str
    benchmark: object
    settings: Settings
    slicing: Slicing
    correct: str
    group: Optional[Slicing]
    models: Dict[str, ModelSummary]

    @property
    def slices(self) -> tuple:
        """The slice values, in order."""
        return self.slicing.values

    def to_dict(self) -> dict:
        """JSON-ready (NaN and infinities become None)::

            {"dataset", "benchmark", "slicing", "slicing_path", "multi",
             "slice_title", "correct", "real_mode", "include_prototypes",
             "gt_field", "field_name", "within", "by", "group_title",
             "min_reliable_n",
             "interval": {...} or None, "slices": [values],
             "models": {FIELD: {"n", "correct", "accuracy", "worst_slice",
                "worst_slice_accuracy", "worst_reliable_slice",
                "worst_100_classes", "ece",
                "slices": {SLICE: {"n", "correct", "accuracy",
                    "error_ratio", "ci_low", "ci_high", "few_images",
                    "share_of_mistakes", "share_of_images",
                    "prevalence_shift", "ece"}},
                "groups": {GROUP: {same, without the model columns}}}}}
        """
        s = self.settings
        out = {
            "dataset": self.dataset,
            "benchmark": self.benchmark.name,
            "slicing": self.slicing.name,
            "slicing_path": self.slicing.path,
            "multi": self.slicing.multi,
            "slice_title": self.slicing.label,
            "correct": self.correct,
            "real_mode": s.real_mode,
            "include_prototypes": s.include_prototypes,
            "gt_field": s.gt_field,
            "field_name": s.field_name,
            "within": list(s.within) if s.within else None,
            "by": self.group.name if self.group else None,
            "group_title": self.group.label if self.group else None,
            "min_reliable_n": MIN_RELIABLE_N,
            "interval": (
                {"method": "bootstrap-percentile", "resamples": s.resamples,
                 "seed": s.seed, "level": s.level}
                if s.intervals else None
            ),
            "slices": [str(v) for v in self.slicing.values],
        }
        out["models"] = {f: m.to_dict() for f, m in self.models.items()}
        return out

    def extremes(self, k: int = 3) -> list:
        """The ImageNet-X paper's Table 4 for any grouping: per model and
        group, up to ``k`` slices with the lowest error ratio below 1
        (robust) and the highest above 1 (susceptible), among the slices
        with enough images when there are any.

        Returns:
            one dict per model and group: model, group, n, accuracy,
            robust, susceptible (``"texture (1.52); ..."``)
        """
        rows = []
        for field, model in self.models.items():
            for group, table in (model.groups or {}).items():
                scored = [
                    (v, r.error_ratio, r.few_images)
                    for v, r in table.slices.items()
                    if r.n > 0 and r.error_ratio == r.error_ratio
                ]
                reliable = [s for s in scored if not s[2]] or scored
                ordered = sorted(reliable, key=lambda s: s[1])
                robust = [s for s in ordered if s[1] < 1]
                susceptible = [s for s in ordered[::-1] if s[1] > 1]
                rows.append({
                    "model": field,
                    "group": group,
                    "n": table.n,
                    "accuracy": None if table.accuracy != table.accuracy else table.accuracy,
                    "robust": "; ".join(f"{v} ({r:.2f})" for v, r, _ in robust[:k]),
                    "susceptible": "; ".join(
                        f"{v} ({r:.2f})" for v, r, _ in susceptible[:k]),
                })
        return rows
