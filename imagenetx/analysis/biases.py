"""The user's models among Gavrikov & Keuper's published ones, for every
bias against every generalization measure.

Gavrikov & Keuper (CVPR 2024) ask whether a model's biases (shape bias,
spectral bias, the critical band) explain how it generalizes (ImageNet,
-A, -R, -Sketch, -V2, -C). :func:`compare_biases` takes the user's measured
values as a plain mapping ``{model label: {name: value}}``, a name being a
bias or measure name of :mod:`imagenetx.benchmarks.cue_conflict.published`
(``shape-bias``, ``spectral-bias``, ``imagenet-a``, ...) or a column of
``benchmark.csv`` (``top1_acc/imagenet-a``, ``metric/bandpass/LFC/0.3``), in
the table's units (accuracies in percent, biases as fractions). A measure
the user did not give directly is computed from the columns it combines
where the user gave them (``spectral-bias`` from the ten band-pass
fractions, ``imagenet-c`` from the ``top1_acc/<corruption>_<severity>``
cells). Per (bias, measure) pair it gives Kendall's tau over the published
models (``scipy.stats.kendalltau``, as the paper); per user model its value
and rank among the published models on each axis.

:func:`gather_values` measures those values on the user's FiftyOne
datasets: shape bias on a cue-conflict dataset, accuracy on ImageNet-X
(ImageNet val) and on the OOD datasets of :mod:`imagenetx.benchmarks.ood`.
Spectral bias, the critical band and corruptions on the fly come from a
field's probe results (:mod:`imagenetx.analysis.probes`) on any dataset.
"""

import math
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from imagenetx.analysis.corruption import corruption_accuracy_of
from imagenetx.analysis.engine import compute_ratios
from imagenetx.analysis.populations import val_images, whole_set_top1
from imagenetx.analysis.probes import probe_results
from imagenetx.analysis.shape_bias import shape_bias
from imagenetx.benchmarks import get_benchmark
from imagenetx.benchmarks.cue_conflict.published import (
    ALL,
    DEFAULT_BIASES,
    DEFAULT_MEASURES,
    MEASURES,
    POPULATION_TITLES,
    Measure,
    PublishedModels,
    load_published,
)
from imagenetx.benchmarks.ood.layouts import LAYOUTS
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.correlation import RankCorrelation, RankPosition, kendall_tau, rank_position
from imagenetx.metrics.stats import to_json
from imagenetx.protocols.base import departure_note
from imagenetx.probes.stored import probe_info
from imagenetx.store.datasets import get_dataset
from imagenetx.store.names import INFO_KEY
from imagenetx.store.schema import prediction_fields


#: the table's column of the plain mean ImageNet-C accuracy
IMAGENET_C_COLUMN = "top1_acc/imagenet-c"


def user_value(measure: Measure, values: Mapping[str, float]) -> Tuple[float, str]:
    """A user model's value of ``measure`` and how it was found.

    The measure's own name first, then (for a single column) the column's
    name, else the measure combined over the columns the user gave (all of
    them, or a note says how many).

    Returns:
        ``(value or NaN, note)``; the note is empty when the value was given
        or computed from every column
    """
    for key in (measure.name, *(measure.columns if len(measure.columns) == 1 else ())):
        if key in values and values[key] is not None:
            return float(values[key]), ""
    given = np.array([[float(values[c])] if values.get(c) is not None else [math.nan]
                      for c in measure.columns])
    have = int(np.isfinite(given).sum())
    if not have:
        return math.nan, ""
    value = float(measure.reduce(given)[0])
    note = "" if have == len(measure.columns) else (
        f"{measure.name} from {have} of its {len(measure.columns)} columns")
    return value, note


@dataclass(frozen=True)
class Axis:
    """One bias or measure over the published models.

    Attributes:
        measure: what it is
        values: per published model its value (NaN where none)
    """

    measure: Measure
    values: np.ndarray


@dataclass
class BiasComparison:
    """The user's models among the published ones.

    Attributes:
        published: the published models of the chosen population
        biases, measures: ``{name: Axis}``, in the order asked
        correlations: ``{(bias, measure): RankCorrelation}`` over the
            published models
        users: ``{label: {name: value}}`` for every bias and measure (NaN
            where the user gave nothing for it)
        positions: ``{label: {name: RankPosition}}`` among the published
            models' values of that axis (rank 1 = the highest)
        notes: what a reader should know (partial ImageNet-C, ...)
    """

    published: PublishedModels
    biases: Dict[str, Axis]
    measures: Dict[str, Axis]
    correlations: Dict[Tuple[str, str], RankCorrelation]
    users: Dict[str, Dict[str, float]]
    positions: Dict[str, Dict[str, RankPosition]]
    notes: List[str] = field(default_factory=list)

    def rows(self) -> List[dict]:
        """One row per (bias, measure) and model, the user's models first
        (``user`` True): the CSV of ``imagenetx biases --csv``."""
        p = self.published
        out = []
        for (b, m), corr in self.correlations.items():
            for label, values in self.users.items():
                out.append({
                    "bias": b, "measure": m, "model": label, "user": True,
                    "category": "user", "bias_value": to_json(values[b]),
                    "measure_value": to_json(values[m]),
                    "bias_rank": self.positions[label][b].rank,
                    "measure_rank": self.positions[label][m].rank,
                    "of": self.positions[label][b].of,
                    "tau": to_json(corr.tau), "p_value": to_json(corr.p_value), "n": corr.n})
            for i, (model, category) in enumerate(zip(p.models, p.categories)):
                out.append({
                    "bias": b, "measure": m, "model": model, "user": False,
                    "category": category,
                    "bias_value": to_json(self.biases[b].values[i]),
                    "measure_value": to_json(self.measures[m].values[i]),
                    "bias_rank": None, "measure_rank": None, "of": None,
                    "tau": to_json(corr.tau), "p_value": to_json(corr.p_value), "n": corr.n})
        return out

    def to_dict(self) -> dict:
        """JSON-ready: ``{"source", "population", "population_title",
        "models": [{"model", "category"}], "biases" / "measures": {name:
        {"label", "unit", "columns", "values": [per model]}}, "pairs":
        [{"bias", "measure", "tau", "p_value", "n"}], "users": {label:
        {name: {"value", "rank", "of", "percentile"}}}, "notes"}``."""
        p = self.published

        def axis(a: Axis) -> dict:
            return {**a.measure.to_dict(), "values": [to_json(v) for v in a.values]}

        return {
            "source": p.source, "population": p.population,
            "population_title": POPULATION_TITLES[p.population],
            "models": [{"model": m, "category": c} for m, c in zip(p.models, p.categories)],
            "biases": {k: axis(a) for k, a in self.biases.items()},
            "measures": {k: axis(a) for k, a in self.measures.items()},
            "pairs": [{"bias": b, "measure": m, **c.to_dict()}
                      for (b, m), c in self.correlations.items()],
            "users": {label: {k: {"value": to_json(v), **self.positions[label][k].to_dict()}
                              for k, v in values.items()}
                      for label, values in self.users.items()},
            "notes": list(self.notes),
        }


def compare_biases(
    values: Mapping[str, Mapping[str, float]],
    biases: Sequence[str] = DEFAULT_BIASES,
    measures: Sequence[str] = DEFAULT_MEASURES,
    population: str = ALL,
    published: Optional[PublishedModels] = None,
    folder: Optional[str] = None,
    notes: Sequence[str] = (),
) -> BiasComparison:
    """Places the user's models in every bias x measure scatter of the
    published models.

    Args:
        values: ``{model label: {bias / measure / column name: value}}`` in
            the table's units (accuracies in %, biases as fractions)
        biases: bias names (:data:`~imagenetx.benchmarks.cue_conflict.
            published.BIASES`) or columns
        measures: measure names (``MEASURES``) or columns
        population: ``"all"`` 70 models or the paper's 48 ``"resnet50"``
        published: the tables, already read; else :func:`load_published`
            of ``folder``
        folder: a local folder with the tables (else
            ``$IMAGENETX_GAVRIKOV_DIR`` or the download cache)
        notes: notes about the values (:func:`collect_values`), kept first

    Raises:
        ImageNetXError: for an unknown name or population, no bias or
            measure, or missing or malformed tables
    """
    if not biases or not measures:
        raise ImageNetXError("Name at least one bias and one measure, e.g. "
                             "`biases=shape-bias` and `measures=imagenet-a`")
    everyone = published if published is not None else load_published(folder)
    models = everyone.subset(population)
    axes = {}
    for name in dict.fromkeys([*biases, *measures]):
        axes[name] = Axis(models.describe(name), models.measure(name))
    users, positions, notes = {}, {}, list(notes)
    for label, given in values.items():
        users[label], positions[label] = {}, {}
        for name, a in axes.items():
            value, note = user_value(a.measure, given)
            if note:
                notes.append(f"{label}: {note}")
            users[label][name] = value
            positions[label][name] = rank_position(a.values, value)
    correlations = {(b, m): kendall_tau(axes[b].values, axes[m].values)
                    for b in dict.fromkeys(biases) for m in dict.fromkeys(measures)}
    return BiasComparison(
        models, {b: axes[b] for b in dict.fromkeys(biases)},
        {m: axes[m] for m in dict.fromkeys(measures)}, correlations, users, positions, notes)


def parse_values(texts: Sequence[str]) -> Dict[str, Dict[str, float]]:
    """``["lite0:spectral-bias=0.02", ...]`` -> ``{"lite0": {"spectral-bias":
    0.02}}`` (the command line's ``--value``).

    Raises:
        ImageNetXError: for text that is not ``MODEL:NAME=NUMBER``
    """
    out: Dict[str, Dict[str, float]] = {}
    for text in texts:
        model, _, rest = text.partition(":")
        name, _, number = rest.rpartition("=")
        try:
            value = float(number)
        except ValueError:
            value = None
        if not model or not name or value is None or not math.isfinite(value):
            raise ImageNetXError(
                f"The value '{text}' is not MODEL:NAME=NUMBER: write e.g. "
                "lite0:spectral-bias=0.021 or lite0:top1_acc/imagenet-a=12.5")
        out.setdefault(model, {})[name] = value
    return out


# -- the user's values from their datasets ----------------------------------


def collect_values(given: Mapping[str, Mapping[str, float]], datasets: Sequence[str] = (),
                   pred_fields: Sequence[str] = ()) -> Tuple[Dict, List[str]]:
    """The values ``given`` plus those :func:`gather_values` measures of
    ``pred_fields`` on ``datasets`` (a given value wins over a measured one).

    Returns:
        ``({model: {name: value}}, notes)``

    Raises:
        ImageNetXError: for datasets without fields or fields without
            datasets, or as :func:`gather_values`
    """
    values = {label: dict(v) for label, v in given.items()}
    if not datasets and not pred_fields:
        return values, []
    if not (datasets and pred_fields):
        raise ImageNetXError("`datasets` and `pred_fields` go together: name the datasets "
                             "and the prediction fields to measure on them")
    measured, notes = gather_values(datasets, pred_fields)
    for label, found in measured.items():
        values[label] = {**found, **values.get(label, {})}
    return values, notes


def gather_values(datasets: Sequence[str], fields: Sequence[str]) -> Tuple[Dict, List[str]]:
    """The user's biases and accuracies measured on their datasets, for
    :func:`compare_biases`: per prediction field, from each dataset that
    holds it, by the dataset's benchmark:

    -   cue-conflict: ``shape-bias`` (:func:`~imagenetx.analysis.shape_bias.
        shape_bias` over the 1,200 conflict images)
    -   ImageNet-X: ``top1_acc/imagenet``, top-1 over every validation image
        with a ground truth (all 50,000 as the table, annotated or not)
    -   ImageNet-A / -R (argmax over their 200 classes), -Sketch: their
        accuracy column; ImageNetV2: the matched-frequency images where the
        dataset has them (the variant the table reports), else all
    -   ImageNet-C: ``top1_acc/<corruption>_<severity>`` per cell present;
        ``imagenet-c`` is their mean, as the authors average the cells
    -   any dataset with probe results of the field (``imagenetx probe``):
        ``spectral-bias``, ``lpp``, ``hpp`` (spectral probe);
        ``critical-band-bw``, ``-cf``, ``-pns`` (critical band, normalized by
        clean accuracy as the table's ``_norm`` columns); the ImageNet-C
        cells and ``imagenet-c`` (corruptions on the fly)

    Accuracies are in percent, as the table has them.

    Returns:
        ``({field: {name: value}}, notes)``

    Raises:
        ImageNetXError: for a dataset of another benchmark, or a field no
            dataset holds
    """

    values: Dict[str, Dict[str, float]] = {f: {} for f in fields}
    notes: List[str] = []
    for name in datasets:
        ds = get_dataset(name)
        probed = _probe_values(ds, fields, notes)
        for f, measured in probed.items():
            values[f].update(measured)
        here = [f for f in fields if f in prediction_fields(ds)]
        if not here:
            continue
        notes.extend(departure_notes(ds, here))
        benchmark = get_benchmark(ds)
        if probed and benchmark.name not in _BENCHMARKS_MEASURED:
            continue  # a dataset probed, not itself one of the table's benchmarks
        found = _measure_dataset(ds, benchmark.name, here, notes)
        for f, measured in found.items():
            values[f].update(measured)
    empty = [f for f, v in values.items() if not v]
    if empty:
        raise ImageNetXError(
            f"No dataset of {', '.join(datasets) or 'none'} holds predictions "
            f"'{', '.join(empty)}': name the prediction fields the datasets have, "
            "or the datasets that hold them")
    return values, notes


def departure_notes(ds, fields) -> List[str]:
    """``FIELD on DATASET: not the authors' setting: PARAM, ...`` for each
    field whose run departed from its protocol (its run record says so)."""
    out = []
    for f in fields:
        record = (ds.get_field(f).info or {}).get(INFO_KEY) or {}
        if record.get("departures"):
            out.append(f"{f} on {ds.name} ({record['protocol']}): "
                       f"{departure_note(record['departures'], record.get('departure_details'))}")
    return out


#: the benchmarks whose datasets :func:`_measure_dataset` measures
_BENCHMARKS_MEASURED = ("cue_conflict", "imagenet_x", "imagenet_a", "imagenet_r",
                        "imagenet_sketch", "imagenet_v2", "imagenet_c", "imagenet_cbar")


def _probe_values(ds, fields, notes) -> Dict[str, Dict[str, float]]:
    """The biases (and on-the-fly ImageNet-C accuracies) of the fields' probe
    results on ``ds``."""

    out: Dict[str, Dict[str, float]] = {}
    for f in fields:
        found = {}
        if probe_info(ds, f, "spectral") is not None:
            s = probe_results(ds, f, "spectral").spectral
            found.update({"spectral-bias": s.bias, "lpp": s.lpp, "hpp": s.hpp})
        if probe_info(ds, f, "critical_band") is not None:
            fit = probe_results(ds, f, "critical_band").critical_band
            if fit is None:
                notes.append(f"{f}: critical-band results on {ds.name} are incomplete "
                             "(every level must run, clean accuracy above 0): no fit")
            elif fit.degenerate:
                notes.append(f"{f}: flat critical-band thresholds on {ds.name}: no band")
            else:
                found.update({"critical-band-bw": fit.bandwidth_octaves,
                              "critical-band-cf": fit.center_frequency,
                              "critical-band-pns": fit.peak_sensitivity})
        if probe_info(ds, f, "corruption") is not None:
            result = probe_results(ds, f, "corruption")
            cells = {f"top1_acc/{level.replace(':', '_')}": 100.0 * result.accuracy(level)
                     for level in result.levels if level != "clean" and result.n.get(level)}
            if cells:
                mean = float(np.mean(list(cells.values())))
                found.update(cells, **{"imagenet-c": mean, IMAGENET_C_COLUMN: mean})
                notes.append(f"{f}: ImageNet-C accuracy from corruptions made on the fly on "
                             f"{ds.name} ({len(cells)} cells; the table averages 19 x 5 on "
                             "ImageNet val)")
        if found:
            out[f] = found
    return out


def _accuracy(view, fields, **settings) -> Dict[str, float]:
    result = compute_ratios(view, list(fields), intervals=False, **settings)
    return {f: 100.0 * m.accuracy for f, m in result.models.items()}


def _measure_dataset(ds, benchmark: str, fields, notes) -> Dict[str, Dict[str, float]]:
    ood = {lay.benchmark: lay for lay in LAYOUTS.values()}
    if benchmark == "cue_conflict":
        result = shape_bias(ds, list(fields), intervals=False, include_humans=False)
        return {f: {"shape-bias": overall.shape_bias}
                for f, (overall, _) in result.models.items()}
    if benchmark == "imagenet_x":
        return _imagenet_top1(ds, fields, notes)
    if benchmark == "imagenet_v2":
        view = ds.match({"variant": "matched-frequency"})
        if not len(view):
            view = ds
            notes.append(f"{ds.name}: no matched-frequency images, ImageNetV2 accuracy "
                         f"over its variants {', '.join(ds.distinct('variant'))}")
        return {f: {ood[benchmark].column: v} for f, v in _accuracy(view, fields).items()}
    if benchmark == "imagenet_c":
        return _imagenet_c(ds, fields, notes)
    if benchmark == "imagenet_cbar":
        out = {}
        for f in fields:
            result = corruption_accuracy_of(ds, f)
            notes.extend(f"{f}: {n}" for n in result.notes)
            value = result.to_dict()["column_value"]
            if value is not None:
                out[f] = {result.column: value}
        return out
    if benchmark in ood:
        return {f: {ood[benchmark].column: v} for f, v in _accuracy(ds, fields).items()}
    raise ImageNetXError(
        f"Dataset '{ds.name}' is a {benchmark} dataset, which measures none of the "
        "published biases or measures: name cue-conflict, ImageNet-X, ImageNet-A, -R, "
        "-Sketch, V2, -C or -C-bar datasets")


def _imagenet_top1(ds, fields, notes) -> Dict[str, Dict[str, float]]:
    """ImageNet top-1 over every val image with a ground truth (all 50,000,
    as the table), ImageNet-X-annotated or not."""
    val = val_images(ds)
    out = {}
    for f, top1 in whole_set_top1(val, fields).items():
        if not top1.n:
            continue
        out[f] = {"top1_acc/imagenet": 100.0 * top1.accuracy}
        predicted = val.exists(f).count()
        if top1.n < predicted:
            notes.append(f"{f}: ImageNet top-1 over the {top1.n:,} of {predicted:,} val "
                         f"images of {ds.name} that have a ground truth (tag it, "
                         "`tag_dataset()`, to give the others theirs)")
        elif top1.n != 50000:
            notes.append(f"{f}: ImageNet top-1 over {top1.n:,} val images of {ds.name}; "
                         "the table's over all 50,000")
    return out


def _imagenet_c(ds, fields, notes) -> Dict[str, Dict[str, float]]:
    result = compute_ratios(ds, list(fields), intervals=False,
                            slicing="corruption", by="severity")
    out = {}
    for f, model in result.models.items():
        cells = {}
        for severity, group in (model.groups or {}).items():
            for corruption, stats in group.slices.items():
                if stats.n:
                    cells[f"top1_acc/{corruption}_{severity}"] = 100.0 * stats.accuracy
        mean = float(np.mean(list(cells.values())))
        # the measure and the table's own column (the robustness average reads it)
        out[f] = {**cells, "imagenet-c": mean, IMAGENET_C_COLUMN: mean}
        full = len(MEASURES["imagenet-c"].columns)
        if len(cells) != full:
            notes.append(f"{f}: ImageNet-C accuracy over {len(cells)} corruption x "
                         f"severity cells of {ds.name}; the table's averages {full}")
    return out
