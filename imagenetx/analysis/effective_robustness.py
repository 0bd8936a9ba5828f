"""Effective robustness of a prediction field, or of a testbed model.

A field's run on ImageNet val gives each shift's **class-matched** clean
top-1 (the x of the testbed's line: all of val for ImageNetV2, -Sketch and
-C; the val images of ImageNet-A's or -R's 200 classes, the output
restricted to them, for those two); the same field on each shift's dataset
gives the shift's top-1; the testbed's line for that shift
(:func:`imagenetx.protocols.effective_robustness.fit_line`) gives the
expected top-1 and its bootstrap interval at that x. A zero-shot open_clip
run is also measured against the line of open_clip's zero-shot table.

- :func:`robustness`: the command's one call (a testbed model, or a field)
- :func:`testbed_robustness`, :func:`field_robustness`: the two readouts
- :func:`shift_cloud`: a shift's testbed points, line and band, for charts
- :func:`factor_robustness`: a factor's error ratio against effective
  robustness over the testbed models that ImageNet-X scored
"""

import math
from dataclasses import dataclass, field, replace
from typing import Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from imagenetx.analysis.calibration import calibration_readout
from imagenetx.analysis.columns import read_columns
from imagenetx.analysis.engine import compute_ratios
from imagenetx.analysis.populations import val_images, whole_set_top1
from imagenetx.analysis.shifts import SHIFT_DATASETS, parse_shifts, read_shift
from imagenetx.benchmarks import get_benchmark
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.benchmarks.imagenet_x.reference import read_reference
from imagenetx.benchmarks.ood.layouts import CORRUPTIONS, LAYOUTS, SEVERITIES
from imagenetx.classes.spaces import ClassSubset, ExactClass
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.effective_robustness import inverse_logit
from imagenetx.metrics.stats import to_json
from imagenetx.protocols import effective_robustness as er
from imagenetx.store.datasets import get_dataset
from imagenetx.store.names import INFO_KEY

#: Spearman's rho interval: resamples, seed and level of the bootstrap
RHO_RESAMPLES = 1000
RHO_SEED = 0
RHO_LEVEL = 0.95


@dataclass(frozen=True)
class ShiftReadout:
    """One shift's numbers (percent; effective robustness in points).

    Attributes:
        shift: the shift's key (:data:`~imagenetx.protocols.effective_robustness.SHIFTS`)
        clean_top1: the class-matched clean top-1 (the line's x)
        top1: top-1 on the shift
        predicted_top1: the line's top-1 at ``clean_top1``
        interval: the line's 95 % bootstrap band at ``clean_top1``, as an
            interval on the effective robustness (None: not drawn)
        n_clean, n_shift: images counted (None for a testbed row)
        in_fit: whether the model is one of the line's (testbed rows)
        zero_shot: the same against open_clip's zero-shot line, where one
            exists and the field is a zero-shot open_clip run
    """

    shift: str
    clean_top1: float
    top1: float
    predicted_top1: float
    interval: Optional[Tuple[float, float]] = None
    n_clean: Optional[int] = None
    n_shift: Optional[int] = None
    in_fit: Optional[bool] = None
    zero_shot: Optional[dict] = None

    @property
    def effective_robustness(self) -> float:
        return self.top1 - self.predicted_top1

    def to_dict(self) -> dict:
        s = er.get_shift(self.shift)
        line = er.fit_line(s, band=False)
        return {"shift": self.shift, "title": s.title, "x_column": s.x_column,
                "y_column": s.y_column, "clean_top1": self.clean_top1, "top1": self.top1,
                "predicted_top1": self.predicted_top1,
                "effective_robustness": self.effective_robustness,
                "interval": list(self.interval) if self.interval else None,
                "n_clean": self.n_clean, "n_shift": self.n_shift, "in_fit": self.in_fit,
                "line": {"pieces": [{"slope": p.line.slope, "intercept": p.line.intercept,
                                     "below": p.below} for p in line.pieces],
                         "n": line.n, "source": line.source},
                "zero_shot": self.zero_shot}


@dataclass(frozen=True)
class RobustnessResult:
    """Effective robustness per shift of one model.

    Attributes:
        model: the testbed model's name, or the prediction field
        source: ``"testbed"`` or the clean (ImageNet val) dataset's name
        shifts: ``{shift: ShiftReadout}``
        datasets: ``{shift: dataset name}`` (a field's run)
        zero_shot: whether the field is a zero-shot open_clip run
        calibration: a :func:`imagenetx.analysis.calibration.calibration_readout`
            dict, when asked for
        factors: ``{shift: factor_robustness dict}``, when asked for
    """

    model: str
    source: str
    shifts: Dict[str, ShiftReadout]
    datasets: Dict[str, str] = field(default_factory=dict)
    zero_shot: bool = False
    calibration: Optional[dict] = None
    factors: Optional[dict] = None

    def to_dict(self) -> dict:
        """JSON-ready: ``{"model", "source", "zero_shot", "datasets",
        "shifts": {SHIFT: {..., "effective_robustness", "interval", ...}},
        "calibration", "factors"}``."""
        return to_json({"model": self.model, "source": self.source,
                        "zero_shot": self.zero_shot, "datasets": dict(self.datasets),
                        "shifts": {k: v.to_dict() for k, v in self.shifts.items()},
                        "calibration": self.calibration, "factors": self.factors})


def _interval(shift: str, clean: float, top1: float, zero_shot: bool = False):
    """The line's band at ``clean`` as an interval on the effective
    robustness: ``(top1 - upper, top1 - lower)``."""
    line = (er.zero_shot_line(shift, grid=[clean]) if zero_shot
            else er.fit_line(shift, grid=[clean]))
    _, lower, upper = line.band()
    return (float(top1 - inverse_logit(upper[0])), float(top1 - inverse_logit(lower[0])))


def _zero_shot_readout(shift: str, clean: float, top1: float, intervals: bool) -> dict:
    line = er.zero_shot_line(shift, band=False)
    predicted = float(line.predict(clean))
    return {"predicted_top1": predicted, "effective_robustness": top1 - predicted,
            "interval": list(_interval(shift, clean, top1, True)) if intervals else None,
            "slope": line.slope, "intercept": line.intercept, "n": line.n,
            "source": line.source}


def testbed_robustness(model: str, intervals: bool = True) -> RobustnessResult:
    """Each shift's top-1, the line's prediction and the effective
    robustness of one testbed model, by its name in the testbed's table.

    Raises:
        ImageNetXError: an unknown name (with the close matches)
    """
    rows = er.testbed_model(model)
    shifts = {}
    for name, r in rows.items():
        shifts[name] = ShiftReadout(
            name, r["clean_top1"], r["top1"], r["predicted_top1"],
            _interval(name, r["clean_top1"], r["top1"]) if intervals else None,
            in_fit=r["in_fit"])
    return RobustnessResult(model, "testbed", shifts)


# -- a field's run --------------------------------------------------------------


def run_record(samples, pred_field: str) -> dict:
    """The run record a field's ``info`` keeps ({} for imported predictions)."""
    return (samples._dataset.get_field(pred_field).info or {}).get(INFO_KEY) or {}


def is_zero_shot(record: dict) -> bool:
    """Whether a run record is a zero-shot open_clip run's."""
    return record.get("source") == "open_clip" and bool(record.get("zero_shot"))


def _check_field(samples, pred_field: str, what: str) -> None:
    if not samples.has_field(pred_field):
        raise ImageNetXError(
            f"{what} '{samples._dataset.name}' has no field '{pred_field}': predict it "
            f"there (`predict`, `field='{pred_field}'`) or name another `pred_field`")


def clean_top1(val, pred_field: str, subset: Optional[str] = None,
               gt_field: str = "ground_truth") -> Tuple[float, int]:
    """``(top-1 percent, images)`` of a field on the ImageNet val images of
    ``val``: all of them, or (``subset`` ``"a"``/``"r"``/``"objectnet"``) those
    of ImageNet-A's or -R's 200 classes, or ObjectNet's 125, with the output
    restricted to those classes (the testbed's ``val-on-imagenet-{a,r}-classes``
    and ``val-on-objectnet-classes``; needs stored logits)."""
    images = val_images(val)
    if subset is None:
        t = whole_set_top1(images, [pred_field], gt_field)[pred_field]
        if not t.n:
            raise _no_val(val, pred_field)
        return 100.0 * t.correct / t.n, t.n
    classes = np.asarray(LAYOUTS[subset].classes)
    gt_path = f"{gt_field}.class_index"
    space = ClassSubset(ExactClass(gt_path), classes, "subset")
    columns = read_columns(images, [gt_path, *space.model_paths(pred_field)])
    truth = np.array([-1 if v is None else int(v) for v in columns[gt_path]])
    if not len(truth):
        raise _no_val(val, pred_field)
    has_logits = any(v is not None for v in columns[f"{pred_field}.logits"])
    if not has_logits:
        raise ImageNetXError(
            f"Field '{pred_field}' on '{val._dataset.name}' has no stored logits, and "
            f"{LAYOUTS[subset].title}'s clean top-1 restricts the output to its "
            f"{len(classes)} ImageNet classes: predict again with `logits=True`")
    correct, counted = space.score(pred_field, columns)
    keep = counted & np.isin(truth, classes)
    if not keep.any():
        raise _no_val(val, pred_field)
    return 100.0 * float(correct[keep].mean()), int(keep.sum())


def _no_val(val, pred_field: str) -> ImageNetXError:
    return ImageNetXError(
        f"Dataset '{val._dataset.name}' has no ImageNet val image "
        f"(ILSVRC2012_val_*) with a ground truth and a '{pred_field}' prediction: "
        "pass the ImageNet val dataset as `dataset`")


def shift_top1(samples, pred_field: str, shift_key: str,
               gt_field: str = "ground_truth") -> Dict[str, Tuple[float, int]]:
    """``{shift: (top-1 percent, images)}`` of a field on one shift's
    dataset (:func:`imagenetx.analysis.shifts.read_shift`): ``imagenet-v2``
    gives every ImageNetV2 variant the dataset holds; ``imagenet-c`` the
    testbed's on-disk average (each corruption's mean over its severities,
    then the mean of the 19 corruptions: all 95 must be there)."""
    data = read_shift(samples, pred_field, shift_key, gt_field)
    correct = data.prepared.correct[pred_field]
    if data.key == "imagenet-c":
        return {data.key: _corruption_average(data.prepared, pred_field)}
    return {shift: (100.0 * float(correct[keep].mean()), int(keep.sum()))
            for shift, keep in data.masks.items()}


def _corruption_average(p, pred_field: str) -> Tuple[float, int]:
    counted, correct = p.counted[pred_field], p.correct[pred_field]
    corruption = np.array([str(v) for v in p.columns["corruption"]])
    severity = np.array([-1 if v is None else int(v) for v in p.columns["severity"]])
    per, missing = [], []
    for c in CORRUPTIONS:
        accs = []
        for s in SEVERITIES:
            keep = counted & (corruption == c) & (severity == s)
            if keep.any():
                accs.append(float(correct[keep].mean()))
            else:
                missing.append(f"{c}/{s}")
        per.append(np.mean(accs) if accs else math.nan)
    if missing:
        raise ImageNetXError(
            f"ImageNet-C's line averages all {len(CORRUPTIONS)} corruptions x "
            f"{len(SEVERITIES)} severities, and '{p.dataset_name}' has no "
            f"'{pred_field}' prediction on {len(missing)} of them (e.g. {missing[0]}): "
            "load and predict the whole release")
    return 100.0 * float(np.mean(per)), int(counted.sum())


def field_robustness(dataset, pred_field: str, shifts: Mapping[str, str],
                     gt_field: str = "ground_truth", intervals: bool = True) -> RobustnessResult:
    """The effective robustness of a prediction field on each shift.

    Args:
        dataset: the ImageNet val dataset (or view, or name) the field
            predicted: the class-matched clean top-1
        pred_field: the prediction field, the same name on every dataset
        shifts: ``{shift: dataset}``: a shift key (``imagenet-v2`` for every
            variant a dataset holds, ``imagenet-v2-threshold-0.7``,
            ``imagenet-sketch``, ``imagenet-a``, ``imagenet-r``,
            ``imagenet-c``) and the dataset of that shift
        gt_field ("ground_truth"): the ground truth of every dataset
        intervals (True): the line's bootstrap band at the field's x

    Raises:
        ImageNetXError: a missing dataset or field, a dataset of another
            benchmark, an unknown shift, logits needed and not stored
    """
    if not shifts:
        raise ImageNetXError("Name at least one shift: `shifts={'imagenet-v2': DATASET}`")
    val = get_dataset(dataset)
    _check_field(val, pred_field, "Dataset")
    zero_shot = is_zero_shot(run_record(val, pred_field))
    readouts, names, clean = {}, {}, {}
    for key, name in shifts.items():
        samples = get_dataset(name)
        for shift, (top1, n) in shift_top1(samples, pred_field, key, gt_field).items():
            s = er.get_shift(shift)
            subset = SHIFT_DATASETS[shift][1]
            if subset not in clean:
                clean[subset] = clean_top1(val, pred_field, subset, gt_field)
            x, n_clean = clean[subset]
            predicted = float(er.fit_line(s, band=False).predict(x))
            zs = (_zero_shot_readout(shift, x, top1, intervals)
                  if zero_shot and s.zero_shot_column else None)
            readouts[shift] = ShiftReadout(
                shift, x, top1, predicted, _interval(shift, x, top1) if intervals else None,
                n_clean, n, zero_shot=zs)
            names[shift] = samples._dataset.name
    return RobustnessResult(pred_field, val._dataset.name, readouts, names, zero_shot)


# -- the testbed's cloud, and factors against effective robustness -------------


def shift_cloud(shift: str) -> dict:
    """A shift's testbed models, line and band, for a chart: ``{"shift",
    "title", "x_column", "y_column", "models", "types", "x", "y", "in_fit",
    "band": {"x", "lower", "upper"}, "line": {"x", "y"}}`` in percent
    (every model with both columns; the band over the testbed's grid)."""
    s = er.get_shift(shift)
    table = er.testbed_table()
    x, y = table.column(s.x_column), table.column(s.y_column)
    keep = ~(np.isnan(x) | np.isnan(y))
    models = [m for m, k in zip(table.models, keep) if k]
    line = er.fit_line(s)
    grid, lower, upper = line.band()
    fitted = set(line.models)
    gx = inverse_logit(grid)
    return to_json({
        "shift": s.name, "title": s.title, "x_column": s.x_column, "y_column": s.y_column,
        "models": models, "types": [er.model_type(m, s) for m in models],
        "x": x[keep].tolist(), "y": y[keep].tolist(), "in_fit": [m in fitted for m in models],
        "band": {"x": gx.tolist(), "lower": inverse_logit(lower).tolist(),
                 "upper": inverse_logit(upper).tolist()},
        "line": {"x": gx.tolist(), "y": line.predict(gx).tolist()},
        "n": line.n})


def _rho(a: np.ndarray, b: np.ndarray) -> float:
    import scipy.stats  # lazy: start-up

    return float(scipy.stats.spearmanr(a, b).statistic)


def factor_robustness(factor: str, shift: str, which: str = "top", correct: str = "class",
                      results_dir: str = None, users: Optional[Mapping[str, Tuple[float, float]]] = None,
                      resamples: int = RHO_RESAMPLES, seed: int = RHO_SEED,
                      level: float = RHO_LEVEL) -> dict:
    """A factor's error ratio against effective robustness on a shift, over
    the testbed models ImageNet-X scored (its ``imagenet_testbed`` tables)
    that the shift's figure shows (both columns, no ``subsample``, clean
    top-1 at least the shift's threshold): one point each, Spearman's rho
    with a percentile-bootstrap interval over the models (``resamples``,
    ``RandomState(seed)``).

    Args:
        factor: an ImageNet-X factor (``style``)
        shift: a shift key (``imagenet-r``)
        which ("top"), correct ("class"): the tables' labelling and correctness
        results_dir (None): a local copy of the authors' ``results`` folder
        users (None): ``{name: (error ratio, effective robustness)}`` placed
            among them

    Returns:
        ``{"factor", "shift", "which", "correct", "models", "error_ratio",
        "effective_robustness", "rho", "interval", "n", "resamples", "seed",
        "level", "users"}``
    """
    if factor not in FACTORS:
        raise ImageNetXError(f"Unknown factor '{factor}': use one of {', '.join(FACTORS)}")
    s = er.get_shift(shift)
    t = read_reference("imagenet_testbed", which, correct, results_dir=results_dir)
    shown = set(er.fit_line(s, band=False).shown)
    table = er.testbed_table()
    k = FACTORS.index(factor)
    names, ratios, eff = [], [], []
    xs, ys = table.column(s.x_column), table.column(s.y_column)
    line = er.fit_line(s, band=False)
    for m, acc, avg in zip(t.models, t.accuracy[:, k], t.average):
        if m not in shown or m not in table.models or not np.isfinite(acc):
            continue
        i = table.models.index(m)
        names.append(m)
        ratios.append((1 - acc) / (1 - avg))
        eff.append(float(ys[i] - line.predict(xs[i])))
    ratios, eff = np.array(ratios), np.array(eff)
    rho = _rho(ratios, eff)
    rng = np.random.RandomState(seed)
    draws = np.array([_rho(ratios[idx], eff[idx])
                      for idx in (rng.choice(len(names), len(names)) for _ in range(resamples))])
    tail = 100 * (1 - level) / 2
    lo, hi = np.nanpercentile(draws, [tail, 100 - tail])
    return to_json({"factor": factor, "shift": s.name, "which": which, "correct": correct,
                    "models": names, "error_ratio": ratios.tolist(),
                    "effective_robustness": eff.tolist(), "rho": rho,
                    "interval": [float(lo), float(hi)], "n": len(names),
                    "resamples": resamples, "seed": seed, "level": level,
                    "users": {u: {"error_ratio": float(r), "effective_robustness": float(e)}
                              for u, (r, e) in (users or {}).items()}})


def _field_error_ratio(dataset, pred_field: str, factor: str, gt_field: str) -> float:
    ratios = compute_ratios(dataset, [pred_field], slicing="top_factor", correct="class",
                            intervals=False, gt_field=gt_field).to_dict()
    return ratios["models"][pred_field]["slices"][factor]["error_ratio"]


# -- the command's one call ------------------------------------------------------


def robustness(dataset=None, pred_field: Optional[str] = None,
               shifts=None, testbed_model: Optional[str] = None,
               calibration: bool = False, factor: Optional[str] = None,
               gt_field: str = "ground_truth", intervals: bool = True,
               results_dir: str = None, **calibration_options) -> RobustnessResult:
    """Effective robustness of a testbed model (``testbed_model``) or of a
    prediction field (``dataset``, ``pred_field``, ``shifts``), optionally
    with the calibration readout (:func:`imagenetx.analysis.calibration.
    calibration_readout`, its options as keywords) and a factor's error ratio
    against effective robustness on each shift (``factor``). ``shifts``: a
    ``{shift: dataset}`` mapping or ``KEY=DATASET`` strings
    (:func:`imagenetx.analysis.shifts.parse_shifts`).

    Raises:
        ImageNetXError: neither or both of a testbed model and a field, or
            the errors of :func:`field_robustness`
    """
    shifts = parse_shifts(shifts)
    if (testbed_model is None) == (dataset is None):
        raise ImageNetXError(
            "Name a testbed model (`testbed_model`) or a run (`dataset`, `pred_field`, "
            "`shifts`), not both")
    if testbed_model is not None:
        if calibration:
            raise ImageNetXError("The calibration readout needs a run: pass `dataset`, "
                                 "`pred_field` and `shifts`, not `testbed_model`")
        result = testbed_robustness(testbed_model, intervals)
    else:
        if not pred_field:
            raise ImageNetXError("Name the prediction field: `pred_field`")
        result = field_robustness(dataset, pred_field, shifts, gt_field, intervals)
    extra = {}
    if calibration:
        extra["calibration"] = calibration_readout(
            dataset, pred_field, shifts, gt_field=gt_field, **calibration_options)
    if factor is not None:
        ratio = None
        if testbed_model is None:
            ratio = _field_error_ratio(dataset, pred_field, factor, gt_field)
        extra["factors"] = {
            name: factor_robustness(
                factor, name, results_dir=results_dir,
                # a testbed model is one of the points already
                users=None if ratio is None else {pred_field: (ratio, r.effective_robustness)})
            for name, r in result.shifts.items()}
    return replace(result, **extra) if extra else result


# -- the panel's chart: this shift's cloud with the fields placed on it -------

#: the shift benchmarks' keys for :func:`field_robustness`, by benchmark name
BENCHMARK_SHIFTS: Dict[str, str] = {
    LAYOUTS[kind].benchmark: ("imagenet-v2" if kind == "v2" else key)
    for key, (kind, _) in SHIFT_DATASETS.items()}
#: the ImageNetV2 variant the chart draws when a dataset holds several
V2_DRAWN = "imagenet-v2-matched-frequency"


def _benchmark_of(dataset) -> Optional[str]:
    return ((dataset.info or {}).get("imagenetx") or {}).get("benchmark")


def clean_dataset_of(pred_field: str, names: Optional[Sequence[str]] = None) -> Optional[str]:
    """The ImageNet val dataset (ImageNet-X's benchmark) that holds
    ``pred_field``, the largest if several do; None if none does."""
    import fiftyone as fo  # lazy: the analysis reads without FiftyOne's listing

    found = []
    for name in names if names is not None else fo.list_datasets():
        dataset = fo.load_dataset(name)
        if dataset.has_field(pred_field) and get_benchmark(dataset).name == "imagenet_x":
            found.append((len(dataset), name))
    return max(found)[1] if found else None


def shift_chart_data(samples, pred_fields: Sequence[str],
                     clean_dataset: Optional[str] = None) -> dict:
    """A shift dataset's testbed cloud and each field placed on it: its
    top-1 on this dataset (all of it) against its class-matched clean top-1
    on the ImageNet val dataset that holds the same field
    (:func:`clean_dataset_of`, or ``clean_dataset``).

    Returns:
        ``{"dataset", "shift", "cloud": shift_cloud, "results": [field's
        robustness dict], "missing": {field: why it is not placed}}``

    Raises:
        ImageNetXError: a dataset that is not a shift's (ImageNetV2, -Sketch,
            -A, -R, -C, ObjectNet)
    """
    dataset = get_dataset(samples)._dataset
    benchmark = _benchmark_of(dataset)
    if benchmark not in BENCHMARK_SHIFTS:
        raise ImageNetXError(
            f"Dataset '{dataset.name}' is not a dataset of a shift with a testbed line "
            f"(its benchmark: {benchmark or 'none'}): load one with `Benchmark.load()` "
            f"({', '.join(sorted(BENCHMARK_SHIFTS))})")
    key = BENCHMARK_SHIFTS[benchmark]
    results, missing = [], {}
    for field_name in pred_fields:
        clean = clean_dataset or clean_dataset_of(field_name)
        if clean is None:
            missing[field_name] = (f"no ImageNet val dataset holds '{field_name}': predict the "
                                   "same field there to place it")
            continue
        try:
            results.append(field_robustness(clean, field_name, {key: dataset.name}).to_dict())
        except ImageNetXError as e:
            missing[field_name] = str(e)
    placed = [s for r in results for s in r["shifts"]]
    shift = (V2_DRAWN if key == "imagenet-v2" and (V2_DRAWN in placed or not placed)
             else placed[0] if placed else key)
    return to_json({"dataset": dataset.name, "shift": shift, "cloud": shift_cloud(shift),
                    "results": results, "missing": missing})
