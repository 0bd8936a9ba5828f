"""Pull the columns a metric needs from a FiftyOne view, in one query.

The metric functions here read a view with a single ``values()`` call and
hand the arrays to :mod:`imagenetx.metrics`. :func:`mistakes_view` builds
the matching view of misclassified samples with the same definitions (a
query, not a read), so its count equals the number of mistakes behind each
error ratio.

Which images count (the same in every function):

-   samples with an ImageNet-X annotation (``imagenetx.split`` set)
-   not one of the paper's 3,000 prototypes, unless ``include_prototypes``
-   with a ground truth ``class_index`` and, per model, a prediction with a
    ``class_index`` (a model without a prediction on an image skips that
    image, as the toolkit's inner merge does)
-   for ``correct="real"`` in ``clean`` mode: with a non-empty ReaL set
"""


import numpy as np
from fiftyone import ViewField as F
from fiftyone.core.expressions import ViewExpression

from imagenetx.store.datasets import get_dataset
from imagenetx.errors import ImageNetXError
from imagenetx.memory import gc_paused
from imagenetx.classes.imagenet import METACLASSES, class_table
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx import metrics
from imagenetx.metrics import (
    CORRECTNESS,
    REAL_MODES,
    WHICH,
    FactorTable,
    RealSets,
    check_modes,
    factor_table,
)
from imagenetx.benchmarks.imagenet_x.tagging import DEFAULT_FIELD

__all__ = [
    "CORRECTNESS",
    "REAL_MODES",
    "WHICH",
    "compute_ratios",
    "mistakes_view",
    "compare_models",
    "compare_groups",
    "factor_accuracies",
]

_FACTOR_INDEX = {f: i for i, f in enumerate(FACTORS)}
_METACLASS_INDEX = {m: i for i, m in enumerate(METACLASSES)}


# --------------------------------------------------------------------------
# checks and the base view


def _name(samples) -> str:
    return samples._dataset.name


def _check_fields(samples, pred_fields, gt_field, field_name):
    if not samples.has_field(field_name):
        raise ImageNetXError(
            f"Dataset '{_name(samples)}' has no field '{field_name}': "
            "run `imagenetx tag` first"
        )
    if not samples.has_field(f"{gt_field}.class_index"):
        raise ImageNetXError(
            f"Dataset '{_name(samples)}' has no ground truth field "
            f"'{gt_field}' with a class_index: run `imagenetx tag` (or pass "
            "--gt-field)"
        )
    if isinstance(pred_fields, str):
        pred_fields = [pred_fields]
    if not pred_fields:
        raise ImageNetXError("Pass at least one prediction field")
    if len(set(pred_fields)) != len(pred_fields):
        raise ImageNetXError(
            f"Prediction fields repeat: {', '.join(pred_fields)}"
        )
    for field in pred_fields:
        if not samples.has_field(field):
            raise ImageNetXError(
                f"Dataset '{_name(samples)}' has no prediction field "
                f"'{field}': run `imagenetx predict`, import predictions "
                "with `imagenetx import-predictions`, or pass an existing field"
            )
        if not samples.has_field(f"{field}.class_index"):
            raise ImageNetXError(
                f"Field '{field}' of dataset '{_name(samples)}' has no "
                "class_index: it must be a fo.Classification written by "
                "`imagenetx predict` or `imagenetx import-predictions` (or "
                "with a class_index attribute, 0-999)"
            )
    return list(pred_fields)


def _check_factor(factor):
    if factor not in _FACTOR_INDEX:
        raise ImageNetXError(
            f"Unknown factor '{factor}': use one of {', '.join(FACTORS)}"
        )


def _check_metaclass(metaclass):
    if metaclass is not None and metaclass not in _METACLASS_INDEX:
        raise ImageNetXError(
            f"Unknown meta-class '{metaclass}': use one of "
            f"{', '.join(METACLASSES)}"
        )


def _base_view(samples, field_name, include_prototypes, metaclass=None):
    """The annotated samples that the statistics use (a plain query
    filter, cheaper for the database than an expression)."""
    query = {f"{field_name}.split": {"$ne": None}}
    if not include_prototypes:
        query[f"{field_name}.prototype"] = False
    if metaclass is not None:
        query[f"{field_name}.metaclass"] = metaclass
    return samples.match(query)


# --------------------------------------------------------------------------
# one query -> arrays


class _Columns:
    """The arrays of a view, and per model its correctness."""

    def __init__(self, view, pred_fields, which, correct, real_mode,
                 gt_field, field_name, by_metaclass):
        factor_path = (
            f"{field_name}.top_factor" if which == "top"
            else f"{field_name}.factors"
        )
        paths = [factor_path, f"{gt_field}.class_index"]
        if by_metaclass:
            paths.append(f"{field_name}.metaclass")
        if correct == "real":
            paths.append(f"{field_name}.real_labels")
        first_pred = len(paths)
        for field in pred_fields:
            paths += [f"{field}.class_index", f"{field}.confidence"]

        # the one query; one array per sample decodes about twice as fast
        # as one key per field. Decoding creates ~10 objects per sample,
        # which would trigger full garbage collections over everything
        # FiftyOne has loaded: they are paused meanwhile.
        with gc_paused():
            rows = view.values(
                ViewExpression([F(p) for p in paths]), _raw=True
            )
            n = len(rows)
            columns = list(zip(*rows)) if n else [()] * len(paths)
            del rows
        if not n:
            raise ImageNetXError(
                f"No ImageNet-X annotated samples in '{_name(view)}' "
                "(this view): run `imagenetx tag` first"
            )
        self.n = n
        if which == "top":
            self.factors = _top_matrix(columns[0])
        else:
            self.factors = _multi_matrix(columns[0])
        gt = _int_column(columns[1])
        self.gt = gt
        self.has_gt = gt >= 0
        if not self.has_gt.any():
            raise ImageNetXError(
                f"No sample of '{_name(view)}' (this view) has a ground "
                f"truth '{gt_field}.class_index': run `imagenetx tag`"
            )
        k = 2
        self.metaclass = None
        if by_metaclass:
            self.metaclass = np.fromiter(
                (_METACLASS_INDEX.get(m, -1) for m in columns[k]),
                dtype=np.int64, count=n,
            )
            if (self.metaclass < 0).any():
                raise ImageNetXError(
                    f"Some samples of '{_name(view)}' have no valid "
                    f"'{field_name}.metaclass': run `imagenetx tag` again"
                )
            k += 1
        self.real = None
        if correct == "real":
            lists = columns[k]
            if any(labels is None for labels in lists):
                raise ImageNetXError(
                    "ReaL labels exist only for validation images, and this "
                    "view holds training images: select validation samples "
                    f"(`{field_name}.split == 'val'`) for --correct real"
                )
            self.real = RealSets.from_lists(lists)

        self.correct, self.counted, self.confidence = {}, {}, {}
        for j, field in enumerate(pred_fields):
            pred = _int_column(columns[first_pred + 2 * j])
            conf = np.array(
                [np.nan if c is None else c for c in columns[first_pred + 2 * j + 1]],
                dtype=np.float64,
            )
            has = (pred >= 0) & self.has_gt
            if not has.any():
                raise ImageNetXError(
                    f"Field '{field}' has no prediction on the annotated "
                    f"samples of '{_name(view)}' (this view)"
                )
            if pred.max() >= 1000:
                raise ImageNetXError(
                    f"Field '{field}' has class_index values outside 0-999"
                )
            safe = np.where(has, pred, 0)
            is_correct, counted = metrics.correctness(
                safe, np.where(self.has_gt, gt, 0), correct,
                self.real, real_mode,
            )
            self.correct[field] = is_correct
            self.counted[field] = counted & has
            self.confidence[field] = conf


def _int_column(values) -> np.ndarray:
    """Ints with None -> -1."""
    return np.array(
        [-1 if v is None else v for v in values], dtype=np.int64
    )


def _top_matrix(top) -> np.ndarray:
    idx = np.fromiter(
        (_FACTOR_INDEX.get(f, -1) for f in top), dtype=np.int64, count=len(top)
    )
    matrix = np.zeros((len(top), len(FACTORS)), dtype=bool)
    rows = np.flatnonzero(idx >= 0)
    matrix[rows, idx[rows]] = True
    return matrix


def _multi_matrix(lists) -> np.ndarray:
    lists = [labels or () for labels in lists]
    sizes = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    cols = np.fromiter(
        (_FACTOR_INDEX.get(f, -1) for labels in lists for f in labels),
        dtype=np.int64, count=int(sizes.sum()),
    )
    rows = np.repeat(np.arange(len(lists)), sizes)
    matrix = np.zeros((len(lists), len(FACTORS)), dtype=bool)
    ok = cols >= 0
    matrix[rows[ok], cols[ok]] = True
    return matrix


def _load(samples, pred_fields, which, correct, real_mode, include_prototypes,
          gt_field, field_name, metaclass=None, by_metaclass=False):
    check_modes(which, correct, real_mode)
    _check_metaclass(metaclass)
    samples = get_dataset(samples)
    pred_fields = _check_fields(samples, pred_fields, gt_field, field_name)
    view = _base_view(samples, field_name, include_prototypes, metaclass)
    cols = _Columns(view, pred_fields, which, correct, real_mode, gt_field,
                    field_name, by_metaclass)
    return samples, pred_fields, cols


# --------------------------------------------------------------------------
# public API


def compute_ratios(
    samples,
    pred_fields,
    which: str = "top",
    correct: str = "class",
    real_mode: str = "clean",
    include_prototypes: bool = False,
    gt_field: str = "ground_truth",
    field_name: str = DEFAULT_FIELD,
    metaclass: str = None,
    by_metaclass: bool = False,
    intervals: bool = True,
    resamples: int = metrics.BOOTSTRAP_RESAMPLES,
    seed: int = metrics.BOOTSTRAP_SEED,
    level: float = metrics.INTERVAL_LEVEL,
) -> dict:
    """Per-factor accuracy, error ratio and interval of prediction fields.

    One ``values()`` query reads every field of every model; the statistics
    are :mod:`imagenetx.metrics`. With ``correct="class"``, ``"metaclass"``
    or ``"real"`` in ``"paper"`` mode and the default settings, the numbers
    equal the original ``imagenet_x`` toolkit's tables.

    Args:
        samples: a dataset, view, or dataset name
        pred_fields: one prediction field or a list of them:
            ``fo.Classification`` with ``class_index`` (and ``confidence``
            for calibration)
        which ("top"): ``"top"`` (each image counts under its top factor) or
            ``"multi"`` (under each of its factors)
        correct ("class"): ``"class"`` (exact class), ``"metaclass"`` (the
            predicted class is in the true class's meta-class) or
            ``"real"`` (the prediction is in the image's ReaL label set)
        real_mode ("clean"): for ``"real"``: ``"clean"`` leaves images with
            an empty ReaL set out; ``"paper"`` counts them wrong, as the
            toolkit does
        include_prototypes (False): whether to keep the 3,000 prototype
            images that the paper leaves out
        gt_field ("ground_truth"): the ground truth field
        field_name ("imagenetx"): the ImageNet-X field
        metaclass (None): restrict to the images of one meta-class
        by_metaclass (False): add each model's meta-class x factor tables
        intervals (True): compute bootstrap intervals on the error ratios
        resamples (1000), seed (0), level (0.95): the bootstrap settings
            (see :func:`imagenetx.metrics.error_ratio_intervals`)

    Returns:
        a JSON-serialisable dict (NaN and infinities become None)::

            {
              "dataset", "which", "correct", "real_mode",
              "include_prototypes", "gt_field", "field_name", "metaclass",
              "by_metaclass", "min_reliable_n": 50,
              "interval": {"method": "bootstrap-percentile", "resamples",
                           "seed", "level"} or None,
              "factors": [the 16 factor names, in order],
              "models": {FIELD: {
                 "n", "correct", "accuracy",            # chosen mode
                 "worst_factor", "worst_factor_accuracy",
                 "worst_reliable_factor",              # among n >= 50
                 "worst_100_classes", "ece",
                 "factors": {FACTOR: {
                    "n", "correct", "accuracy", "error_ratio",
                    "ci_low", "ci_high", "few_images",
                    "share_of_mistakes", "share_of_images",
                    "prevalence_shift", "ece"}},
                 "metaclasses": {METACLASS: {"n", "correct", "accuracy",
                    "worst_factor", "worst_factor_accuracy",
                    "worst_reliable_factor", "factors": {FACTOR: {"n",
                    "correct", "accuracy", "error_ratio", "ci_low",
                    "ci_high", "few_images"}}}}   # only with by_metaclass
              }}
            }

    Raises:
        ImageNetXError: for an unknown mode, factor set or meta-class, a
            missing field, a view without annotated samples, or training
            images with ``correct="real"``
    """
    samples, pred_fields, cols = _load(
        samples, pred_fields, which, correct, real_mode, include_prototypes,
        gt_field, field_name, metaclass, by_metaclass,
    )
    corrects, factors, classes, mcs, confs = {}, {}, {}, {}, {}
    for field in pred_fields:
        keep = cols.counted[field]
        corrects[field] = cols.correct[field][keep]
        factors[field] = cols.factors[keep]
        classes[field] = cols.gt[keep]
        confs[field] = cols.confidence[field][keep]
        if by_metaclass:
            mcs[field] = cols.metaclass[keep]
    models = metrics.summarize_models(
        corrects, factors, classes, mcs if by_metaclass else None, confs,
        intervals=intervals, by_metaclass=by_metaclass,
        resamples=resamples, seed=seed, level=level,
    )
    return {
        "dataset": _name(samples),
        "which": which,
        "correct": correct,
        "real_mode": real_mode,
        "include_prototypes": include_prototypes,
        "gt_field": gt_field,
        "field_name": field_name,
        "metaclass": metaclass,
        "by_metaclass": by_metaclass,
        "min_reliable_n": metrics.MIN_RELIABLE_N,
        "interval": (
            {"method": "bootstrap-percentile", "resamples": resamples,
             "seed": seed, "level": level}
            if intervals else None
        ),
        "factors": list(FACTORS),
        "models": models,
    }


def mistakes_view(
    samples,
    pred_field: str,
    factor: str,
    which: str = "top",
    correct: str = "class",
    real_mode: str = "clean",
    include_prototypes: bool = False,
    gt_field: str = "ground_truth",
    field_name: str = DEFAULT_FIELD,
    metaclass: str = None,
):
    """The samples with ``factor`` that ``pred_field`` gets wrong.

    The view uses exactly the definitions of :func:`compute_ratios` (same
    images, same correctness), so for each factor its count equals
    ``n - correct`` of that factor in :func:`compute_ratios` with the same
    arguments. It is a plain FiftyOne view (``match`` stages on view
    expressions), to open in the App or chain further.

    Args:
        samples: a dataset, view, or dataset name
        pred_field: the prediction field
        factor: one of the 16 factors
        which ("top"): the image's top factor is ``factor`` (``"top"``) or
            ``factor`` is among its factors (``"multi"``)
        correct, real_mode, include_prototypes, gt_field, field_name,
            metaclass: as in :func:`compute_ratios`

    Returns:
        a :class:`fiftyone.core.view.DatasetView`
    """
    check_modes(which, correct, real_mode)
    _check_factor(factor)
    _check_metaclass(metaclass)
    samples = get_dataset(samples)
    _check_fields(samples, [pred_field], gt_field, field_name)
    view = _base_view(samples, field_name, include_prototypes, metaclass)

    pred = F(f"{pred_field}.class_index")
    gt = F(f"{gt_field}.class_index")
    if which == "top":
        has_factor = F(f"{field_name}.top_factor") == factor
    else:
        has_factor = F(f"{field_name}.factors").contains(factor)
    expr = has_factor & pred.exists() & gt.exists()

    if correct == "class":
        wrong = pred != gt
    elif correct == "metaclass":
        table = F.literal([int(i) for i in class_table().metaclass_index])
        wrong = table[pred] != table[gt]
    else:
        real = F(f"{field_name}.real_labels")
        train = view.match(F(f"{field_name}.split") != "val").limit(1)
        if len(train):
            raise ImageNetXError(
                "ReaL labels exist only for validation images, and this "
                "view holds training images: select validation samples "
                f"(`{field_name}.split == 'val'`) for correct='real'"
            )
        wrong = ~ViewExpression({"$in": [pred, {"$ifNull": [real, []]}]})
        if real_mode == "clean":
            wrong = wrong & (real.length() > 0)
    return view.match(expr & wrong)


def compare_models(
    samples,
    field_a: str,
    field_b: str,
    which: str = "top",
    correct: str = "class",
    real_mode: str = "clean",
    include_prototypes: bool = False,
    gt_field: str = "ground_truth",
    field_name: str = DEFAULT_FIELD,
    metaclass: str = None,
) -> dict:
    """McNemar's paired test per factor between two prediction fields, on
    the images both predict, with Holm's correction over the factors (see
    :func:`imagenetx.metrics.mcnemar`).

    Returns:
        JSON-ready ``{"a", "b", "n", "accuracy_a", "accuracy_b",
        "method": ..., "overall": {"n", "a_only", "b_only", "statistic",
        "p", "method"}, "factors": {FACTOR: {"n", "a_only", "b_only",
        "statistic", "p", "p_holm", "method"}}}``; ``a_only`` counts images
        that A gets right and B wrong
    """
    if field_a == field_b:
        raise ImageNetXError("Compare two different prediction fields")
    samples, _, cols = _load(
        samples, [field_a, field_b], which, correct, real_mode,
        include_prototypes, gt_field, field_name, metaclass,
    )
    both = cols.counted[field_a] & cols.counted[field_b]
    a = cols.correct[field_a][both]
    b = cols.correct[field_b][both]
    test = metrics.mcnemar(a, b, cols.factors[both])
    return {
        "dataset": _name(samples),
        "a": field_a,
        "b": field_b,
        "which": which,
        "correct": correct,
        "real_mode": real_mode,
        "n": int(both.sum()),
        "accuracy_a": metrics._json(a.mean()) if len(a) else None,
        "accuracy_b": metrics._json(b.mean()) if len(b) else None,
        "method": (
            "McNemar: exact binomial below "
            f"{metrics.MCNEMAR_EXACT_BELOW} discordant pairs, else chi2 "
            "with continuity correction; Holm over factors"
        ),
        **test.to_dict(),
    }


def compare_groups(
    samples,
    groups: dict,
    which: str = "top",
    correct: str = "class",
    real_mode: str = "clean",
    include_prototypes: bool = False,
    gt_field: str = "ground_truth",
    field_name: str = DEFAULT_FIELD,
    metaclass: str = None,
) -> dict:
    """The paper's Alexander-Govern test per factor across groups of models
    (e.g. model families): each group's samples are its models' error
    ratios on the factor (see :func:`imagenetx.metrics.alexander_govern`).

    Args:
        groups: ``{group name: [prediction fields]}``, at least two groups
            of at least two fields each

    Returns:
        JSON-ready ``{"groups": {...}, "factors": {FACTOR: {"statistic",
        "p"}}}``
    """
    fields = [f for members in groups.values() for f in members]
    result = compute_ratios(
        samples, fields, which=which, correct=correct, real_mode=real_mode,
        include_prototypes=include_prototypes, gt_field=gt_field,
        field_name=field_name, metaclass=metaclass, intervals=False,
    )
    models = result["models"]

    def ratios(field):
        return [
            np.nan if models[field]["factors"][f]["error_ratio"] is None
            else models[field]["factors"][f]["error_ratio"]
            for f in FACTORS
        ]

    test = metrics.alexander_govern(
        {g: np.array([ratios(f) for f in members]) for g, members in groups.items()}
    )
    return {
        "dataset": result["dataset"],
        "which": which,
        "correct": correct,
        "real_mode": real_mode,
        "groups": {g: list(members) for g, members in groups.items()},
        "factors": {
            f: {"statistic": metrics._json(test["statistic"][i]),
                "p": metrics._json(test["p"][i])}
            for i, f in enumerate(FACTORS)
        },
    }


def factor_accuracies(
    samples,
    pred_field: str,
    correct: str = "class",
    gt_field: str = "ground_truth",
    field_name: str = DEFAULT_FIELD,
    include_prototypes: bool = False,
    which: str = "top",
    real_mode: str = "clean",
    intervals: bool = False,
) -> FactorTable:
    """Per-factor accuracy of one prediction field over a view, as a
    :class:`imagenetx.metrics.FactorTable` (same images and correctness as
    :func:`compute_ratios`).

    Args:
        samples: a dataset, view, or dataset name
        pred_field: the ``fo.Classification`` prediction field, with
            ``class_index``
        correct ("class"): ``"class"``, ``"metaclass"`` or ``"real"``
        gt_field ("ground_truth"): the ground truth field
        field_name ("imagenetx"): the ImageNet-X field
        include_prototypes (False): whether to keep the paper's 3,000
            prototype images, which it leaves out
        which ("top"): ``"top"`` or ``"multi"``
        real_mode ("clean"): ``"clean"`` or ``"paper"`` (empty ReaL set =
            wrong, the toolkit's convention)
        intervals (False): whether to add bootstrap intervals

    Returns:
        a :class:`imagenetx.metrics.FactorTable`
    """
    _, _, cols = _load(
        samples, [pred_field], which, correct, real_mode, include_prototypes,
        gt_field, field_name,
    )
    keep = cols.counted[pred_field]
    return factor_table(
        cols.correct[pred_field][keep], cols.factors[keep], intervals=intervals
    )
