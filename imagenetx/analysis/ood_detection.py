"""OOD detection scored on a dataset: each detector's score per image (stored
as a float field), its metrics per OOD source and per role against the ID
images, the benchmark's headline as its authors compute it, the false
positives per ImageNet-X factor and the OOD images a detector misses.

The dataset is an OOD-detection benchmark as its loaders write it
(:mod:`imagenetx.benchmarks.ood_detection.contract`: ``ood_role``,
``ood_source``, ``ood_class``; ID images with their ground truth); the logits are a prediction field's stored logits
(``imagenetx predict --logits``), the features an embeddings field
(``imagenetx embed``). The scores are :mod:`imagenetx.ood`'s detectors, the
metrics :mod:`imagenetx.metrics.ood`.
"""

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.benchmarks.ood_detection.contract import (
    CLASS_FIELD,
    ID,
    IMAGENET_O,
    IMAGENET_VAL,
    INFO_KEY,
    NINCO,
    OPENOOD_IMAGENET,
    OOD_ROLES,
    ROLE_FIELD,
    SOURCE_FIELD,
    SOURCES,
)
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.ood import (
    TPR_LEVEL,
    Headline,
    OODMetrics,
    get_convention,
    ninco_headline,
    ood_metrics,
    openood_headline,
)
from imagenetx.metrics.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, to_json, wilson_interval
from imagenetx.ood import FitStats, Outputs, detector_names, get_detector
from imagenetx.store.datasets import get_dataset

#: the OOD sets in the order results list them
OOD_SOURCES = tuple(s for s in SOURCES if s != IMAGENET_VAL)

#: each benchmark's convention, as its authors compute FPR@95 and the AUPRs
BENCHMARK_CONVENTIONS = {IMAGENET_O: "hendrycks", NINCO: "ninco", OPENOOD_IMAGENET: "openood"}
#: the detectors scored when none are named: those that read the logits alone
DEFAULT_DETECTORS = ("msp", "max_logit", "energy", "gen", "temp_scaling")
#: the share of the ID images held out to fit a detector's statistics
FIT_FRACTION = 0.1


def score_field(pred_field: str, detector: str) -> str:
    """Where :func:`score_ood` writes ``detector``'s scores of ``pred_field``:
    ``<pred_field>_ood_<detector>``."""
    return f"{pred_field}_ood_{detector}"


@dataclass
class DetectorScores:
    """One detector's scores and metrics.

    Attributes:
        name: the detector's name
        field: the score field written (None when not stored)
        metrics: all OOD images pooled against the ID images
        sources: ``{OOD source: metrics}``
        roles: ``{role: metrics}`` (``near``, ``far``, ``ood``)
        headline: the benchmark's headline for this detector (None where the
            benchmark has none for it; :attr:`note` says why)
        n_fit: the ID images its statistics were fitted on (left out of its
            metrics); 0 when it fits nothing or was given its statistics
        stats: its fitted statistics
        note: what is missing, in one line
    """

    name: str
    field: Optional[str]
    metrics: OODMetrics
    sources: Dict[str, OODMetrics]
    roles: Dict[str, OODMetrics]
    headline: Optional[Headline] = None
    n_fit: int = 0
    stats: Optional[FitStats] = None
    note: Optional[str] = None

    def to_dict(self) -> dict:
        """JSON-ready: the pooled metrics at the top (``auroc``, ``fpr95``,
        ``aupr_in``, ``aupr_out``, ...), then ``sources``, ``roles`` and
        ``headline``."""
        out = self.metrics.to_dict()
        out.update(
            field=self.field, n_fit=self.n_fit,
            sources={k: m.to_dict() for k, m in self.sources.items()},
            roles={k: m.to_dict() for k, m in self.roles.items()},
            headline=self.headline.to_dict() if self.headline else None)
        if isinstance(self.stats, FitStats) and self.name == "temp_scaling":
            out["temperature"] = self.stats.temperature
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class OODScores:
    """:func:`score_ood`'s result.

    Attributes:
        dataset: the dataset's name
        pred_field: the prediction field whose logits were scored
        benchmark: ``dataset.info["imagenetx"]["benchmark"]`` (None if unset)
        convention: the metrics' convention
        detectors: ``{name: DetectorScores}``
        counts: ``{role: images}``, and ``{source: images}``
        fit: the held-out ID part: ``{"fraction", "seed", "n"}``
        fit_ids: the ids of those ID images
        ids, roles, sources: per scored sample
        scores: ``{detector: (n,) scores}``, in the order of :attr:`ids`
    """

    dataset: str
    pred_field: str
    benchmark: Optional[str]
    convention: str
    detectors: Dict[str, DetectorScores]
    counts: Dict[str, Dict[str, int]]
    fit: Dict[str, float]
    fit_ids: List[str] = field(repr=False, default_factory=list)
    ids: List[str] = field(repr=False, default_factory=list)
    roles: np.ndarray = field(repr=False, default=None)
    sources: np.ndarray = field(repr=False, default=None)
    scores: Dict[str, np.ndarray] = field(repr=False, default_factory=dict)

    def distributions(self, detector: str) -> Dict[str, np.ndarray]:
        """``{"ID": scores, <OOD source>: scores, ...}`` of one detector."""
        s = self.scores[detector]
        out = {"ID": s[self.roles == ID]}
        for source in _ordered(self.sources[self.roles != ID], OOD_SOURCES):
            out[source] = s[(self.sources == source) & (self.roles != ID)]
        return out

    def to_dict(self) -> dict:
        """JSON-ready: each detector's metrics under its name (in
        ``detectors``) and ``headline``: ``{detector: headline}``."""
        return {
            "dataset": self.dataset, "pred_field": self.pred_field,
            "benchmark": self.benchmark, "convention": self.convention,
            "counts": self.counts, "fit": self.fit,
            "detectors": {k: d.to_dict() for k, d in self.detectors.items()},
            "headline": {k: d.headline.to_dict() if d.headline else None
                         for k, d in self.detectors.items()},
        }


def _ordered(values, order: Sequence[str]) -> List[str]:
    present = {str(v) for v in values if v is not None}
    return [v for v in order if v in present] + sorted(present - set(order))


def _benchmark(dataset) -> Optional[str]:
    return (dataset.info.get("imagenetx") or {}).get("benchmark")


def _check_contract(samples, pred_field: str) -> None:
    name = samples._dataset.name
    if not samples.has_field(ROLE_FIELD):
        raise ImageNetXError(
            f"Dataset '{name}' has no '{ROLE_FIELD}' field: load an OOD-detection benchmark "
            "(ImageNet-O, NINCO or OpenOOD's ImageNet-1K, with `Benchmark.load()`) to score OOD "
            "detectors")
    if not samples.has_field(pred_field):
        raise ImageNetXError(
            f"Dataset '{name}' has no prediction field '{pred_field}': predict with "
            "`logits=True` first, or pass `pred_field`")


def _matrix(rows: list, what: str, hint: str) -> np.ndarray:
    missing = sum(r is None for r in rows)
    if missing:
        raise ImageNetXError(f"{missing} of {len(rows)} samples have no {what}: {hint}")
    return np.stack([np.asarray(r, dtype=np.float32).ravel() for r in rows])


@dataclass
class _Columns:
    ids: List[str]
    roles: np.ndarray
    sources: np.ndarray
    classes: np.ndarray
    labels: np.ndarray
    logits: np.ndarray
    features: Optional[np.ndarray]


def _read(samples, pred_field: str, gt_field: str, features_field: Optional[str]) -> _Columns:
    paths = ["id", ROLE_FIELD, f"{pred_field}.logits"]
    # a root field's presence: a Classification's class_index may be undeclared
    optional = [p for p in (SOURCE_FIELD, CLASS_FIELD, f"{gt_field}.class_index")
                if samples.has_field(p.split(".")[0])]
    if features_field:
        if not samples.has_field(features_field):
            raise ImageNetXError(
                f"Dataset '{samples._dataset.name}' has no embeddings field "
                f"'{features_field}': run `run_embed()` first, or pass `features_field`")
        optional.append(features_field)
    cols = dict(zip(paths + optional, samples.values(paths + optional)))
    keep = [k for k, r in enumerate(cols[ROLE_FIELD]) if r is not None]
    if not keep:
        raise ImageNetXError(
            f"No sample of dataset '{samples._dataset.name}' has an '{ROLE_FIELD}': load "
            "an OOD-detection benchmark with `Benchmark.load()`")

    def column(path, fill=None):
        values = cols.get(path)
        return [fill if values is None else values[k] for k in keep]

    roles = np.array(column(ROLE_FIELD), dtype=object)
    sources = np.array(column(SOURCE_FIELD), dtype=object)
    logits = _matrix(
        column(f"{pred_field}.logits"), f"logits in '{pred_field}'",
        f"predict with `predict(field='{pred_field}', logits=True, overwrite=True)` to store "
        "them")
    features = None
    if features_field:
        features = _matrix(column(features_field), f"features in '{features_field}'",
                           f"embed them with `run_embed(field='{features_field}')`")
    labels = np.array([-1 if v is None else int(v)
                       for v in column(f"{gt_field}.class_index")], dtype=np.int64)
    return _Columns([cols["id"][k] for k in keep], roles, sources,
                    np.array(column(CLASS_FIELD), dtype=object), labels, logits, features)


def _fit_rows(c: _Columns, fraction: float, seed: int) -> np.ndarray:
    """A seeded, sorted draw of ``fraction`` of the labelled ID images."""
    if not 0 <= fraction < 1:
        raise ImageNetXError(f"`fit_fraction` is {fraction}: use a share in [0, 1)")
    pool = np.flatnonzero((c.roles == ID) & (c.labels >= 0))
    n = int(round(fraction * len(pool)))
    return np.sort(np.random.default_rng(seed).choice(pool, n, replace=False))


def _outputs(c: _Columns, rows, head, logits=None, labels=None) -> Outputs:
    weight, bias = head if head is not None else (None, None)
    z = c.logits if logits is None else logits
    y = c.labels if labels is None else labels
    return Outputs(logits=z[rows], labels=y[rows],
                   features=None if c.features is None else c.features[rows],
                   weight=weight, bias=bias)


def _check_detector(det, features_field, head) -> None:
    needs = set(det.needs) | ({"features"} if det.fit_on == "id_train" else set())
    if "features" in needs and not features_field:
        raise ImageNetXError(
            f"The OOD detector '{det.name}' reads penultimate features: pass "
            "`features_field` (the field `run_embed()` wrote)")
    if {"weight", "bias"} & needs and head is None:
        raise ImageNetXError(
            f"The OOD detector '{det.name}' needs the head's weight and bias, which the "
            "embed run does not store: pass `head` (W, b) or leave it out")


def _check_fit(det, has_stats: bool, n_fit: int) -> None:
    if det.fit_on and not has_stats and not n_fit:
        raise ImageNetXError(
            f"The OOD detector '{det.name}' is fitted on held-out ID images and none are "
            "held out: raise `fit_fraction` or give its statistics in `stats`")


def _metrics(scores, id_rows, ood_mask, convention, resamples, seed) -> OODMetrics:
    return ood_metrics(scores[id_rows], scores[ood_mask], convention,
                       resamples=resamples, seed=seed)


def score_ood(
    samples,
    pred_field: str,
    detectors: Sequence[str] = DEFAULT_DETECTORS,
    convention: Optional[str] = None,
    store: bool = True,
    features_field: Optional[str] = None,
    head: Optional[Tuple[np.ndarray, np.ndarray]] = None,
    stats: Optional[Mapping[str, FitStats]] = None,
    options: Optional[Mapping[str, dict]] = None,
    fit_fraction: float = FIT_FRACTION,
    seed: int = BOOTSTRAP_SEED,
    intervals: bool = True,
    gt_field: str = "ground_truth",
) -> OODScores:
    """Scores OOD detectors on an OOD-detection dataset: per image (stored as
    ``<pred_field>_ood_<detector>``, :func:`score_field`), per OOD source and
    per role against the ID images, and the benchmark's headline.

    A detector with statistics to fit (``temp_scaling``; ``react``, ``vim``,
    ``knn``) is fitted on a seeded ``fit_fraction`` of the labelled ID
    images, never on OOD images, and those images are left out of its
    metrics (each metric says its ``n_id``); others are scored against all
    ID images. Headlines: NINCO's mean per-class AUROC (its ``ninco``
    images), ImageNet-O's AUPR of anomalies with the detector's score of
    the logits masked to its 200 classes (``-MSP`` for ``msp``, as
    Hendrycks et al.), OpenOOD's near and far means (``openood``
    convention).

    Args:
        samples: a dataset, view, or dataset name
        pred_field: the prediction field with stored logits
        detectors: names of :func:`imagenetx.ood.get_detector`
        convention (None): of :data:`imagenetx.metrics.ood.CONVENTIONS`;
            None: the benchmark's own (:data:`BENCHMARK_CONVENTIONS`)
        store (True): write each detector's scores to its field
        features_field (None): the embeddings field of ``imagenetx embed``
            (penultimate features), for ``react``, ``ash_s``, ``vim``, ``knn``
        head (None): the classifier head's ``(W, b)``, for ``react``,
            ``ash_s``, ``vim``
        stats (None): ``{detector: FitStats}`` fitted elsewhere (e.g. on
            ImageNet's training images); these detectors fit nothing here
        options (None): ``{detector: keyword options}``
        fit_fraction (0.1), seed (0): the held-out ID share and its seed
            (also the bootstrap's)
        intervals (True): bootstrap intervals of every metric
        gt_field ("ground_truth"): the ID images' ground truth

    Raises:
        ImageNetXError: before anything is written, for a dataset that is no
            OOD-detection benchmark, logits or features missing on any
            sample, an unknown detector or convention, a detector without
            what it reads
    """
    samples = get_dataset(samples)
    dataset = samples._dataset
    _check_contract(samples, pred_field)
    benchmark = _benchmark(dataset)
    convention = get_convention(
        convention or BENCHMARK_CONVENTIONS.get(benchmark, "openood")).name
    names = [d.strip().replace("-", "_") for d in detectors if d and d.strip()]
    if not names:
        raise ImageNetXError("No OOD detector named: pass `detectors`, e.g. ['msp', 'energy']")
    built = {n: get_detector(n, **dict((options or {}).get(n) or {})) for n in names}
    stats = dict(stats or {})
    for det in built.values():
        _check_detector(det, features_field, head)
    c = _read(samples, pred_field, gt_field, features_field)
    fit = _fit_rows(c, fit_fraction, seed)
    for det in built.values():
        _check_fit(det, det.name in stats, len(fit))
    is_id = c.roles == ID
    if not is_id.any() or is_id.all():
        raise ImageNetXError(
            f"Dataset '{dataset.name}' holds {'no ID' if not is_id.any() else 'no OOD'} "
            f"images ('{ROLE_FIELD}'): an OOD metric needs both")
    resamples = BOOTSTRAP_RESAMPLES if intervals else 0
    everyone = np.arange(len(c.ids))
    results, scores = {}, {}
    for name, det in built.items():
        given = stats.get(name)
        fitted = det.fit(_outputs(c, fit, head)) if det.fit_on and given is None else given
        s = det.score(_outputs(c, everyone, head), fitted)
        scores[name] = s
        held_out = det.fit_on and given is None
        id_rows = np.setdiff1d(np.flatnonzero(is_id), fit) if held_out else np.flatnonzero(is_id)
        results[name] = DetectorScores(
            name, score_field(pred_field, name) if store else None,
            _metrics(s, id_rows, ~is_id, convention, resamples, seed),
            {src: _metrics(s, id_rows, (c.sources == src) & ~is_id, convention, resamples, seed)
             for src in _ordered(c.sources[~is_id], OOD_SOURCES)},
            {role: _metrics(s, id_rows, c.roles == role, convention, resamples, seed)
             for role in _ordered(c.roles[~is_id], OOD_ROLES)},
            n_fit=len(fit) if held_out else 0, stats=fitted)
        _headline(results[name], benchmark, dataset, c, s, id_rows, det, fitted, head,
                  held_out, fit)
    if store:
        _store(dataset, c.ids, {score_field(pred_field, n): s for n, s in scores.items()})
    counts = {"roles": {r: int((c.roles == r).sum()) for r in _ordered(c.roles, (ID,) + OOD_ROLES)},
              "sources": {s: int((c.sources == s).sum())
                          for s in _ordered(c.sources, SOURCES)}}
    return OODScores(dataset.name, pred_field, benchmark, convention, results, counts,
                     {"fraction": fit_fraction, "seed": seed, "n": int(len(fit))},
                     [c.ids[k] for k in fit], c.ids, c.roles, c.sources, scores)


def _headline(result: DetectorScores, benchmark, dataset, c: _Columns, s, id_rows, det,
              fitted, head, held_out: bool, fit) -> None:
    """Sets ``result.headline`` (or its note) as the benchmark's authors
    compute it."""
    if benchmark == NINCO:
        rows = c.sources == "ninco"
        if rows.any():
            result.headline = ninco_headline(s[id_rows], s[rows], c.classes[rows])
        else:
            result.note = "no 'ninco' images: NINCO's headline is over its 64 classes"
    elif benchmark == OPENOOD_IMAGENET:
        near, far = ({src: m if m.convention == "openood" else ood_metrics(
            s[id_rows], s[(c.sources == src) & (c.roles == role)], "openood", resamples=0)
            for src, m in result.sources.items()
            if ((c.sources == src) & (c.roles == role)).any()} for role in ("near", "far"))
        if near and far:
            result.headline = openood_headline(near, far)
        else:
            result.note = "OpenOOD's headline needs near- and far-OOD sets"
    elif benchmark == IMAGENET_O:
        _imagenet_o(result, dataset, c, id_rows, det, fitted, head, held_out, fit)


def _imagenet_o(result, dataset, c: _Columns, id_rows, det, fitted, head, held_out, fit):
    """ImageNet-O's headline: the detector on the logits of its 200 classes
    (a temperature refitted on them), anomalies positive, Hendrycks et al.'s
    ``average_precision_score`` (eval_many_models.py:76-113)."""
    info = ((dataset.info.get("imagenetx") or {}).get(INFO_KEY) or {})
    columns = np.asarray(info.get("class_indices") or [], dtype=np.int64)
    if not len(columns):
        result.note = (f"no class_indices in dataset.info['imagenetx']['{INFO_KEY}']: "
                       "ImageNet-O's headline masks the logits to its 200 classes")
        return
    if set(det.needs) != {"logits"}:
        result.note = "ImageNet-O's headline is of the logits masked to its 200 classes"
        return
    masked = c.logits[:, columns]
    # the labels as positions among the 200 columns (-1: another class)
    position = np.full(max(c.logits.shape[1], int(c.labels.max()) + 1), -1, dtype=np.int64)
    position[columns] = np.arange(len(columns))
    labels = np.where(c.labels >= 0, position[np.maximum(c.labels, 0)], -1)
    stats = fitted
    if held_out:
        rows = fit[labels[fit] >= 0]
        stats = det.fit(Outputs(logits=masked[rows], labels=labels[rows]))
    s = det.score(Outputs(logits=masked), stats)
    m = ood_metrics(s[id_rows], s[c.roles != ID], "hendrycks", resamples=0)
    result.headline = Headline("imagenet_o", {"aupr": m.aupr_out, "auroc": m.auroc,
                                              "fpr95": m.fpr95})


def _store(dataset, ids: List[str], fields: Dict[str, np.ndarray]) -> None:
    import fiftyone as fo  # lazy: start-up (the CLI parser imports analysis)

    for name, values in fields.items():
        if not dataset.has_field(name):
            dataset.add_sample_field(name, fo.FloatField)
        dataset.set_values(name, dict(zip(ids, values.tolist())), key_field="id")


# --- per factor, and the views ------------------------------------------------


def _stored(samples, pred_field: str, detector: str, extra: Sequence[str] = ()):
    samples = get_dataset(samples)
    name = score_field(pred_field, detector)
    if not samples.has_field(ROLE_FIELD):
        _check_contract(samples, pred_field)
    if not samples.has_field(name):
        raise ImageNetXError(
            f"No '{name}' scores in dataset '{samples._dataset.name}': score them with "
            f"`score_ood`, `pred_field='{pred_field}'`, `detectors=['{detector}']` first")
    paths = ["id", ROLE_FIELD, name, *extra]
    return samples, name, dict(zip(paths, samples.values(paths)))


def id_threshold(id_scores, tpr: float = TPR_LEVEL) -> float:
    """The score that keeps ``tpr`` of the ID images (those scoring at or
    above it): ``np.quantile(id_scores, 1 - tpr)``, NINCO's and Hendrycks'
    operating point."""
    x = np.asarray(id_scores, dtype=np.float64)
    if not len(x):
        raise ImageNetXError("No scored ID images: the threshold keeps a share of them")
    return float(np.quantile(x, 1 - tpr))


def _threshold(cols: dict, name: str, tpr: float) -> float:
    return id_threshold([s for r, s in zip(cols[ROLE_FIELD], cols[name])
                         if r == ID and s is not None], tpr)


@dataclass
class FactorFalsePositives:
    """A detector's false positives per ImageNet-X factor: the ID images it
    flags as OOD (score below :attr:`threshold`, which keeps ``tpr`` of the
    ID images).

    Attributes:
        field: the score field read
        slicing: ``"top_factor"`` or ``"factors"`` (an image counts under
            each of its factors)
        threshold, tpr: the operating point
        rows: one per factor: ``factor``, ``n``, ``flagged``, ``share``,
            ``ci_low``, ``ci_high`` (Wilson), ``ratio`` (share / overall)
        n, flagged: the ID images with a factor, and those flagged
    """

    field: str
    slicing: str
    threshold: float
    tpr: float
    rows: List[dict]
    n: int
    flagged: int

    def to_dict(self) -> dict:
        """JSON-ready."""
        return {"field": self.field, "slicing": self.slicing, "threshold": self.threshold,
                "tpr": self.tpr, "n": self.n, "flagged": self.flagged,
                "share": to_json(self.flagged / self.n if self.n else None),
                "rows": [{k: to_json(v) for k, v in r.items()} for r in self.rows]}


def false_positives_per_factor(samples, pred_field: str, detector: str,
                               slicing: str = "top_factor",
                               tpr: float = TPR_LEVEL) -> FactorFalsePositives:
    """Which kinds of ID images look OOD to a detector: per ImageNet-X factor
    of the ID images (``imagenetx.top_factor``, or every one of
    ``imagenetx.factors``), the share the detector flags at the threshold
    that keeps ``tpr`` (95 %) of all ID images.

    Args:
        samples: a dataset, view, or dataset name, scored by :func:`score_ood`
        pred_field, detector: whose scores (:func:`score_field`)
        slicing ("top_factor"): ``"top_factor"`` or ``"factors"``
        tpr (0.95): the share of ID images kept

    Raises:
        ImageNetXError: for scores not stored, or ID images without factors
    """
    if slicing not in ("top_factor", "factors"):
        raise ImageNetXError(f"`slicing` is '{slicing}': use 'top_factor' or 'factors'")
    path = f"imagenetx.{slicing}"
    samples, name, cols = _stored(samples, pred_field, detector)
    if not samples.has_field("imagenetx"):
        raise ImageNetXError(
            f"The ID images of dataset '{samples._dataset.name}' carry no ImageNet-X "
            f"factors ('{path}'): tag them with `tag_dataset()` first")
    threshold = _threshold(cols, name, tpr)
    factors = samples.values(path)
    n, flagged = {}, {}
    total = hits = 0
    for role, s, f in zip(cols[ROLE_FIELD], cols[name], factors):
        if role != ID or s is None or not f:
            continue
        low = int(s < threshold)
        total += 1
        hits += low
        for factor in ([f] if slicing == "top_factor" else f):
            n[factor] = n.get(factor, 0) + 1
            flagged[factor] = flagged.get(factor, 0) + low
    if not total:
        raise ImageNetXError(
            f"No scored ID image of dataset '{samples._dataset.name}' has a factor in "
            f"'{path}': tag the ID images with `tag_dataset()`")
    overall = hits / total
    rows = []
    for factor in sorted(n, key=lambda k: (-flagged[k] / n[k], k)):
        share = flagged[factor] / n[factor]
        low, high = wilson_interval(flagged[factor], n[factor])
        rows.append({"factor": factor, "n": n[factor], "flagged": flagged[factor],
                     "share": share, "ci_low": float(low), "ci_high": float(high),
                     "ratio": share / overall if overall else None})
    return FactorFalsePositives(name, slicing, threshold, tpr, rows, total, hits)


def flagged_id_view(samples, pred_field: str, detector: str, factor: Optional[str] = None,
                    tpr: float = TPR_LEVEL):
    """The ID images the detector flags as OOD (its false positives at the
    threshold keeping ``tpr`` of the ID images), lowest score first;
    ``factor``: only those whose top ImageNet-X factor it is."""
    from fiftyone import ViewField as F  # lazy: start-up (the CLI parser imports analysis)

    samples, name, cols = _stored(samples, pred_field, detector)
    threshold = _threshold(cols, name, tpr)
    view = samples.match((F(ROLE_FIELD) == ID) & F(name).exists() & (F(name) < threshold))
    if factor is not None:
        view = view.match(F("imagenetx.top_factor") == factor)
    return view.sort_by(name)


def missed_ood_view(samples, pred_field: str, detector: str, source: Optional[str] = None,
                    tpr: float = TPR_LEVEL):
    """The OOD images the detector misses: scored at or above the threshold
    that keeps ``tpr`` of the ID images, highest score (most ID-looking)
    first; ``source``: only that OOD set."""
    from fiftyone import ViewField as F  # lazy: start-up (the CLI parser imports analysis)

    samples, name, cols = _stored(samples, pred_field, detector)
    threshold = _threshold(cols, name, tpr)
    view = samples.match((F(ROLE_FIELD) != ID) & F(ROLE_FIELD).exists()
                         & (F(name) >= threshold))
    if source is not None:
        view = view.match(F(SOURCE_FIELD) == source)
    return view.sort_by(name, reverse=True)



def read_head(path: str) -> Tuple[np.ndarray, np.ndarray]:
    """A classifier head ``(W, b)`` from an ``.npz`` with arrays ``weight``
    ``(C, D)`` and ``bias`` ``(C,)`` (``np.savez(path, weight=W, bias=b)``).

    Raises:
        ImageNetXError: for a missing file or array
    """
    try:
        with np.load(path) as data:
            return np.asarray(data["weight"]), np.asarray(data["bias"])
    except (OSError, ValueError) as e:
        raise ImageNetXError(f"Cannot read the head `head={path}`: {e}") from None
    except KeyError as e:
        raise ImageNetXError(
            f"The head file `head={path}` has no array {e}: save it with "
            "np.savez(path, weight=W, bias=b)") from None


def stored_detectors(samples, pred_field: str) -> List[str]:
    """The detectors whose scores of ``pred_field`` a dataset holds
    (:func:`score_field`), in the registry's order."""
    dataset = get_dataset(samples)._dataset
    return [d for d in detector_names() if dataset.has_field(score_field(pred_field, d))]


def factor_false_positives(samples, pred_fields: Sequence[str], tpr: float = TPR_LEVEL) -> dict:
    """Per prediction field, its first stored detector's false positives per
    ImageNet-X factor (:func:`false_positives_per_factor`): the panel's
    chart of which kinds of ID images look OOD to the model.

    Returns:
        ``{"slice_title", "values": factors, "models": {field: table dict with
        "detector" and "others" (its other stored detectors)}, "missing":
        {field: why it has none}}``
    """
    models, missing = {}, {}
    for field_name in pred_fields:
        stored = stored_detectors(samples, field_name)
        if not stored:
            missing[field_name] = (f"no stored OOD scores: score it with "
                                   f"`score_ood(pred_field='{field_name}')`")
            continue
        table = false_positives_per_factor(samples, field_name, stored[0], tpr=tpr).to_dict()
        models[field_name] = {**table, "detector": stored[0], "others": stored[1:]}
    seen = {r["factor"] for m in models.values() for r in m["rows"]}
    values = [f for f in FACTORS if f in seen] + sorted(seen - set(FACTORS))
    return {"slice_title": "factor", "values": values, "models": models, "missing": missing}
