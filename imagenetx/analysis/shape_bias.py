"""Shape bias of prediction fields on a cue-conflict dataset.

The images and the correctness come from the analysis engine
(:func:`~imagenetx.analysis.engine.prepare`) under the cue-conflict
benchmark's two label spaces, ``shape`` and ``texture``, over the images
whose shape and texture categories differ; the arithmetic is
:mod:`imagenetx.metrics.shape_bias`.
"""

from dataclasses import dataclass, field as dc_field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from imagenetx.analysis.engine import prepare
from imagenetx.benchmarks.cue_conflict.benchmark import CueConflict
from imagenetx.classes.cue_conflict import categories
from imagenetx.metrics.shape_bias import ShapeBias, shape_bias_table
from imagenetx.metrics.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, INTERVAL_LEVEL
from imagenetx.store.datasets import get_dataset

#: the key of the pooled human observers in results
HUMANS = "humans"


@dataclass
class ShapeBiasResults:
    """Shape bias per decision maker, overall and per shape category.

    Attributes:
        dataset: the dataset's name
        models: ``{field: (overall, {category: ShapeBias})}``
        humans: the human observers' fields among ``models``
        human_mean: every human observer's decisions pooled (as
            model-vs-human's plot pools them), or None without humans
    """

    dataset: str
    models: Dict[str, Tuple[ShapeBias, Dict[str, ShapeBias]]]
    humans: List[str] = dc_field(default_factory=list)
    human_mean: Optional[Tuple[ShapeBias, Dict[str, ShapeBias]]] = None

    def to_dict(self) -> dict:
        """JSON-ready: ``{"dataset", "categories", "models": {field: {...,
        "human", "categories": {...}}}, "humans": {...} or None}``."""

        def entry(result, human=None):
            overall, per_category = result
            out = overall.to_dict()
            if human is not None:
                out["human"] = human
            out["categories"] = {c: b.to_dict() for c, b in per_category.items()}
            return out

        return {
            "dataset": self.dataset,
            "categories": list(categories()),
            "models": {f: entry(r, f in self.humans) for f, r in self.models.items()},
            HUMANS: None if self.human_mean is None else {
                "fields": self.humans, **entry(self.human_mean)},
        }


def human_fields(samples) -> List[str]:
    """The human observers' prediction fields of a cue-conflict dataset
    (``imagenetx import-predictions`` of published responses lists them)."""
    dataset = get_dataset(samples)._dataset
    info = dataset.info.get("imagenetx") or {}
    return [f for f in info.get("humans") or () if dataset.has_field(f)]


def shape_bias(samples, pred_fields: Sequence[str], intervals: bool = True,
               include_humans: bool = True,
               resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
               level: float = INTERVAL_LEVEL) -> ShapeBiasResults:
    """Shape bias, shape and texture accuracy of prediction fields, overall
    and per shape category, with bootstrap intervals.

    Args:
        samples: a cue-conflict dataset, view or dataset name
        pred_fields: 16-class prediction fields (``imagenetx predict`` on
            the dataset, or imported responses)
        intervals (True): compute the bootstrap intervals
        include_humans (True): add the pooled human observers of the
            dataset (:func:`human_fields`) as ``human_mean``
        resamples, seed, level: the bootstrap settings

    Raises:
        ImageNetXError: for a dataset without the cue-conflict contract, an
            unknown field, or a field that is not a 16-class decision
    """
    if isinstance(pred_fields, str):
        pred_fields = [pred_fields]
    fields = list(pred_fields)
    humans = human_fields(samples) if include_humans else []
    read = fields + [h for h in humans if h not in fields]
    common = dict(benchmark=CueConflict.name, slicing="shape",
                  within=("cue_conflict", True))
    shape = prepare(samples, read, **common, correct="shape")
    texture = prepare(samples, read, **common, correct="texture")
    category_ids = shape.membership.argmax(axis=1)
    options = dict(intervals=intervals, resamples=resamples, seed=seed, level=level)

    def table(names):
        keep = [shape.counted[f] for f in names]
        return shape_bias_table(
            np.concatenate([shape.correct[f][k] for f, k in zip(names, keep)]),
            np.concatenate([texture.correct[f][k] for f, k in zip(names, keep)]),
            np.concatenate([category_ids[k] for k in keep]),
            categories(), **options)

    models = {f: table([f]) for f in fields}
    return ShapeBiasResults(
        shape.dataset_name, models, [f for f in fields if f in humans],
        table(humans) if humans else None)
