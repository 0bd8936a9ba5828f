"""Shape bias of the user's fields among Gavrikov & Keuper's published
models (:mod:`imagenetx.benchmarks.cue_conflict.published`).

Per generalization measure: every published model's shape bias and value
of the measure, with its training-method category, and Kendall's tau
between the two over the published models (as the paper). The user's
fields have a shape bias only: they get no measure value, so a figure
draws them as vertical lines at their shape bias, unless a published model
has the field's very name (e.g. a field ``tv_resnet50``), whose values they
then take. Each field's shape bias is also ranked among the published
models' (the published model of the same name left out).
"""

from dataclasses import dataclass
from typing import Dict, Optional, Sequence

import numpy as np

from imagenetx.analysis.biases import compare_biases
from imagenetx.analysis.shape_bias import HUMANS, ShapeBiasResults
from imagenetx.benchmarks.cue_conflict.published import (
    ALL,
    DEFAULT_MEASURES,
    POPULATION_TITLES,
    SHAPE_BIAS_COLUMN,
    Measure,
    PublishedModels,
    load_published,
)
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.correlation import (
    RankCorrelation,
    RankPosition,
    rank_position,
)
from imagenetx.metrics.stats import to_json


@dataclass(frozen=True)
class FieldPosition:
    """One of the user's decision makers among the published models.

    Attributes:
        field: the prediction field (or ``"humans"``, the pooled observers)
        shape_bias: its shape bias on the cue-conflict dataset
        position: its rank and percentile among the published shape biases
        published_model: the published model of the same name, if any
    """

    field: str
    shape_bias: float
    position: RankPosition
    published_model: Optional[str] = None

    def to_dict(self) -> dict:
        return {"shape_bias": to_json(self.shape_bias), **self.position.to_dict(),
                "published_model": self.published_model}


@dataclass(frozen=True)
class MeasureComparison:
    """One measure over the published models.

    Attributes:
        measure: what it is
        values: per published model (in :attr:`PublishedModels.models`
            order) its value, NaN where the table has none
        correlation: Kendall's tau of shape bias and the measure
        fields: per user field the value of the published model of the same
            name, or None
    """

    measure: Measure
    values: np.ndarray
    correlation: RankCorrelation
    fields: Dict[str, Optional[float]]

    def to_dict(self) -> dict:
        return {**self.measure.to_dict(), **self.correlation.to_dict(),
                "values": [to_json(v) for v in self.values],
                "fields": {f: to_json(v) for f, v in self.fields.items()}}


@dataclass
class PublishedComparison:
    """The user's shape biases beside the published models.

    Attributes:
        dataset: the cue-conflict dataset of the user's shape biases
        published: the published models of the chosen population
        measures: ``{name: MeasureComparison}``, in the order asked
        fields: ``{field: FieldPosition}``
        humans: the pooled human observers' position, when the dataset has
            their responses
    """

    dataset: str
    published: PublishedModels
    measures: Dict[str, MeasureComparison]
    fields: Dict[str, FieldPosition]
    humans: Optional[FieldPosition] = None

    def to_dict(self) -> dict:
        """JSON-ready: ``{"source", "population", "population_title",
        "n_models", "models": [{"model", "category", "shape_bias"}],
        "measures": {name: {"label", "unit", "columns", "tau", "p_value",
        "n", "values": [per model], "fields": {field: value or None}}},
        "fields": {field: {"shape_bias", "rank", "of", "percentile",
        "published_model"}}, "humans": {...} or None}``."""
        p = self.published
        return {
            "dataset": self.dataset,
            "source": p.source,
            "population": p.population,
            "population_title": POPULATION_TITLES[p.population],
            "n_models": len(p),
            "models": [{"model": m, "category": c, "shape_bias": to_json(b)}
                       for m, c, b in zip(p.models, p.categories, p.shape_bias)],
            "measures": {k: m.to_dict() for k, m in self.measures.items()},
            "fields": {f: pos.to_dict() for f, pos in self.fields.items()},
            HUMANS: None if self.humans is None else self.humans.to_dict(),
        }


def compare_with_published(
    results: ShapeBiasResults,
    measures: Sequence[str] = DEFAULT_MEASURES,
    population: str = ALL,
    published: Optional[PublishedModels] = None,
    folder: Optional[str] = None,
) -> PublishedComparison:
    """Places the shape biases of ``results`` among the published models.

    Args:
        results: :func:`imagenetx.analysis.shape_bias.shape_bias` of the
            user's fields
        measures: names of :data:`~imagenetx.benchmarks.cue_conflict.
            published.MEASURES` or columns of ``benchmark.csv``
        population: ``"all"`` 70 models or the paper's 48 ``"resnet50"``
        published: the tables, already read; else :func:`load_published`
            of ``folder``
        folder: a local folder with the two tables (else
            ``$IMAGENETX_GAVRIKOV_DIR`` or the download cache)

    Returns:
        per measure the published points and Kendall's tau, per field its
        shape bias and rank. The user's fields carry no measure value
        (they are vertical lines at their shape bias in
        :func:`imagenetx.present.figures.published_scatter`) unless a
        published model has the field's name.

    Raises:
        ImageNetXError: for an unknown measure or population, or missing or
            malformed tables
    """
    if isinstance(measures, str):
        measures = [measures]
    if not measures:
        raise ImageNetXError("Name at least one published measure, e.g. imagenet-c")
    everyone = published if published is not None else load_published(folder)
    population_models = everyone.subset(population)
    bias = population_models.shape_bias

    def position(name, value, own_name=None):
        same = everyone.index(own_name) is not None
        keep = [m != own_name for m in population_models.models]
        return FieldPosition(name, value, rank_position(bias[keep], value),
                             own_name if same else None)

    fields = {f: position(f, overall.shape_bias, f)
              for f, (overall, _) in results.models.items()}
    humans = (position(HUMANS, results.human_mean[0].shape_bias)
              if results.human_mean is not None else None)

    # the published scatter and tau: the general bias x measure grid, one row
    grid = compare_biases({}, [SHAPE_BIAS_COLUMN], measures, population, published=everyone)
    out = {}
    for name, axis in grid.measures.items():
        everyone_values = everyone.measure(name)
        own = {}
        for f, pos in fields.items():
            i = everyone.index(pos.published_model) if pos.published_model else None
            own[f] = None if i is None or not np.isfinite(everyone_values[i]) \
                else float(everyone_values[i])
        out[name] = MeasureComparison(axis.measure, axis.values,
                                      grid.correlations[(SHAPE_BIAS_COLUMN, name)], own)
    return PublishedComparison(results.dataset, population_models, out, fields, humans)
