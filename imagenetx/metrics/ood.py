"""Out-of-distribution detection metrics: AUROC, FPR at 95 % TPR, AUPR-In and
AUPR-Out, under the named conventions of OpenOOD, NINCO and Hendrycks et al.,
with stratified bootstrap intervals, and each benchmark's headline number.

Scores are a detector's: higher = more in-distribution (ID). Papers mix up
which class is "positive"; each metric here says it:

-   AUROC: the same number with ID positive (score ``s``) or OOD positive
    (score ``-s``): the probability that an ID image outscores an OOD one,
    ties counted one half.
-   FPR@95, by :data:`CONVENTIONS`: OpenOOD and Hendrycks et al. make OOD
    the positive class (the FPR is the share of ID images flagged when 95 %
    of the OOD ones are caught); NINCO makes ID positive (the share of OOD
    images accepted when 95 % of the ID ones are kept).
-   AUPR-In: ID positive, score ``s``; AUPR-Out: OOD positive, score ``-s``.
    OpenOOD integrates the precision-recall curve with the trapezoid rule
    (``sklearn.metrics.auc(recall, precision)``); Hendrycks et al. report
    scikit-learn's ``average_precision_score`` (a step sum).

Every metric depends only on how many ID and OOD images share each distinct
score, so all are computed from those counts (:class:`_Tally`), with
scikit-learn's curve rules (ties form one threshold; the ROC drops collinear
points as ``roc_curve(drop_intermediate=True)`` does): the same numbers as
the authors' code on the raw arrays (``tests/test_ood_metrics.py`` writes
their functions out), and a bootstrap resample is a recount, not a re-sort.
"""

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, Mapping, Sequence, Tuple

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, INTERVAL_LEVEL, to_json

# numpy 2 renamed trapz
_trapezoid = getattr(np, "trapezoid", None) or np.trapz

#: the true positive rate FPR@95 is read at
TPR_LEVEL = 0.95

#: the metrics of :class:`OODMetrics`, in the order the papers print them
METRICS = ("auroc", "fpr95", "aupr_in", "aupr_out")


@dataclass(frozen=True)
class Convention:
    """How a paper's code computes FPR@95 and the AUPRs.

    Attributes:
        name: ``"openood"``, ``"ninco"`` or ``"hendrycks"``
        positive: the class whose 95 % sets the FPR@95 threshold (``"ood"``
            or ``"id"``); the FPR is the share of the other class on the
            wrong side
        aupr: ``"trapezoid"`` (``auc(recall, precision)``) or
            ``"average_precision"`` (``average_precision_score``)
        source: the authors' file and lines
    """

    name: str
    positive: str
    aupr: str
    source: str


#: the conventions by name
CONVENTIONS: Dict[str, Convention] = {
    # roc_curve(ood, -conf); FPR at the first TPR >= 0.95; AUPR by trapezoid
    "openood": Convention(
        "openood", "ood", "trapezoid",
        "Jingkang50/OpenOOD openood/evaluators/metrics.py:40-61 (auc_and_fpr_recall)"),
    # t = np.quantile(id, 0.05); FPR = mean(ood >= t); NINCO reports no AUPR:
    # scikit-learn's average precision stands in
    "ninco": Convention(
        "ninco", "id", "average_precision",
        "j-cb/NINCO utils.py:215-256 (auroc_ood, fpr_at_tpr)"),
    # anomalies positive, score -conf; FPR at the OOD recall nearest 0.95
    "hendrycks": Convention(
        "hendrycks", "ood", "average_precision",
        "hendrycks/natural-adv-examples calibration_tools.py:117-170 "
        "(fpr_and_fdr_at_recall, get_measures)"),
}


def get_convention(name: str) -> Convention:
    """The convention called ``name``.

    Raises:
        ImageNetXError: for an unknown name
    """
    if name not in CONVENTIONS:
        raise ImageNetXError(
            f"Unknown OOD metric convention '{name}': use one of {', '.join(CONVENTIONS)}")
    return CONVENTIONS[name]


# --- inputs -----------------------------------------------------------------


def _scores(values, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    bad = int(np.count_nonzero(~np.isfinite(x)))
    if bad:
        raise ImageNetXError(
            f"`{name}` holds {bad} NaN or infinite values (of {len(x)}): a detector's "
            "scores must be finite")
    return x


def _pair(id_scores, ood_scores) -> Tuple[np.ndarray, np.ndarray]:
    id_x = _scores(id_scores, "id_scores")
    ood_x = _scores(ood_scores, "ood_scores")
    if not len(ood_x):
        raise ImageNetXError("No OOD samples: `ood_scores` is empty; an OOD metric needs both")
    if not len(id_x):
        raise ImageNetXError("No ID samples: `id_scores` is empty; an OOD metric needs both")
    return id_x, ood_x


def split_scores(scores, is_ood) -> Tuple[np.ndarray, np.ndarray]:
    """``(id_scores, ood_scores)`` of one array of scores and its OOD flags
    (OpenOOD's ``label == -1``).

    Raises:
        ImageNetXError: when the two lengths differ
    """
    scores = np.asarray(scores).ravel()
    flags = np.asarray(is_ood, dtype=bool).ravel()
    if len(scores) != len(flags):
        raise ImageNetXError(
            f"`scores` has {len(scores)} values and `is_ood` {len(flags)}: give one flag "
            "per score")
    return scores[~flags], scores[flags]


# --- the counts every metric reads ------------------------------------------


@dataclass(frozen=True)
class _Tally:
    """ID and OOD images per distinct score (float64 counts), the scores
    ascending; every entry holds at least one image."""

    values: np.ndarray
    id: np.ndarray
    ood: np.ndarray

    @property
    def n_id(self) -> float:
        return float(self.id.sum())

    @property
    def n_ood(self) -> float:
        return float(self.ood.sum())


def _groups(id_x: np.ndarray, ood_x: np.ndarray):
    """The distinct scores and each image's index among them (ID, OOD)."""
    values, index = np.unique(np.concatenate([id_x, ood_x]), return_inverse=True)
    return values, index[: len(id_x)], index[len(id_x):]


def _recount(values, id_index, ood_index) -> _Tally:
    m = len(values)
    i = np.bincount(id_index, minlength=m).astype(np.float64)
    o = np.bincount(ood_index, minlength=m).astype(np.float64)
    keep = (i + o) > 0  # a resample leaves some scores without an image
    return _Tally(values[keep], i[keep], o[keep])


# --- curves, as scikit-learn draws them --------------------------------------


def _roc_ood_positive(t: _Tally) -> Tuple[np.ndarray, np.ndarray]:
    """``(fpr, tpr)`` of ``sklearn.metrics.roc_curve(is_ood, -score)``.

    Descending ``-score`` is ascending score, so the cumulative counts run
    up the tally; the collinear points are dropped by scikit-learn's rule
    (``_ranking.py``, ``roc_curve``: a point is kept where the second
    difference of ``fps`` or ``tps`` is non-zero), which OpenOOD's FPR@95
    reads through.
    """
    tps = np.cumsum(t.ood)
    fps = np.cumsum(t.id)
    if len(tps) > 2:
        keep = np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True]
        tps, fps = tps[keep], fps[keep]
    tps = np.r_[0.0, tps]
    fps = np.r_[0.0, fps]
    return fps / fps[-1], tps / tps[-1]


def _pr(positive: np.ndarray, negative: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(precision, recall)`` of ``sklearn.metrics.precision_recall_curve``
    from counts in descending order of the positive class's score: recall
    decreasing, ending at ``(1, 0)``."""
    tps = np.cumsum(positive)
    fps = np.cumsum(negative)
    precision = tps / (tps + fps)  # each threshold holds an image: never 0 / 0
    recall = tps / tps[-1]
    return np.r_[precision[::-1], 1.0], np.r_[recall[::-1], 0.0]


def _area(precision: np.ndarray, recall: np.ndarray, method: str) -> float:
    if method == "trapezoid":
        # sklearn.metrics.auc(recall, precision): recall decreases
        return float(-_trapezoid(precision, recall))
    # sklearn.metrics.average_precision_score: sum (R_n - R_n-1) P_n
    return float(max(0.0, -np.sum(np.diff(recall) * precision[:-1])))


def _auroc(t: _Tally) -> float:
    fpr, tpr = _roc_ood_positive(t)
    return float(_trapezoid(tpr, fpr))


def _aupr_in(t: _Tally, method: str) -> float:
    # ID positive, score s: descending s is the tally reversed
    return _area(*_pr(t.id[::-1], t.ood[::-1]), method)


def _aupr_out(t: _Tally, method: str) -> float:
    # OOD positive, score -s: descending -s is the tally in order
    return _area(*_pr(t.ood, t.id), method)


def _fpr_openood(t: _Tally, level: float) -> float:
    # OpenOOD metrics.py:48-49: fpr_list[np.argmax(tpr_list >= tpr_th)]
    fpr, tpr = _roc_ood_positive(t)
    return float(fpr[np.argmax(tpr >= level)])


def _fpr_hendrycks(t: _Tally, level: float) -> float:
    # calibration_tools.py:144-157: OOD positive, score -s; the thresholds
    # from full recall down to the first, then the recall nearest `level`
    tps = np.cumsum(t.ood)
    fps = np.cumsum(t.id)
    recall = tps / tps[-1]
    last = int(np.searchsorted(tps, tps[-1]))
    recall = np.r_[recall[last::-1], 1.0]
    fps = np.r_[fps[last::-1], 0.0]
    return float(fps[np.argmin(np.abs(recall - level))] / t.n_id)


def _quantile(values: np.ndarray, counts: np.ndarray, q: float) -> float:
    """``np.quantile`` (its default, linear method) of ``values`` repeated
    ``counts`` times, with numpy's interpolation (``_lerp``) to the bit."""
    n = int(round(counts.sum()))
    h = (n - 1) * q
    lo = math.floor(h)
    gamma = h - lo
    cum = np.cumsum(counts)
    a = values[np.searchsorted(cum, lo, side="right")]
    b = values[np.searchsorted(cum, min(lo + 1, n - 1), side="right")]
    diff = b - a
    return float(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma)


def _fpr_ninco(t: _Tally, level: float) -> float:
    # NINCO utils.py:254-255: t = np.quantile(values_in, 1 - tpr);
    # fpr = (values_out >= t).mean()
    threshold = _quantile(t.values, t.id, 1 - level)
    return float(t.ood[t.values >= threshold].sum() / t.n_ood)


_FPR: Dict[str, Callable[[_Tally, float], float]] = {
    "openood": _fpr_openood, "ninco": _fpr_ninco, "hendrycks": _fpr_hendrycks}


def _all(t: _Tally, conv: Convention, level: float) -> Tuple[float, float, float, float]:
    return (_auroc(t), _FPR[conv.name](t, level),
            _aupr_in(t, conv.aupr), _aupr_out(t, conv.aupr))


# --- the metrics, one at a time ----------------------------------------------


def _tally(id_scores, ood_scores) -> _Tally:
    values, id_index, ood_index = _groups(*_pair(id_scores, ood_scores))
    return _recount(values, id_index, ood_index)


def auroc(id_scores, ood_scores) -> float:
    """Area under the ROC curve: ``roc_auc_score(is_id, s)``, equal to
    OpenOOD's ``auc(*roc_curve(is_ood, -s)[:2])`` (metrics.py:48, 57).

    Raises:
        ImageNetXError: for an empty class or a score that is NaN
    """
    return _auroc(_tally(id_scores, ood_scores))


def fpr_at_tpr(id_scores, ood_scores, convention: str = "openood",
               tpr: float = TPR_LEVEL) -> float:
    """FPR at ``tpr`` (0.95) true positive rate, under ``convention``:

    -   ``"openood"`` (OOD positive): the share of ID images scoring at or
        below the threshold of the first ROC point that catches at least
        ``tpr`` of the OOD images (metrics.py:48-49);
    -   ``"ninco"`` (ID positive): ``mean(ood >= np.quantile(id, 1 - tpr))``,
        the share of OOD images accepted (utils.py:254-255);
    -   ``"hendrycks"`` (OOD positive): as OpenOOD at the ROC point whose OOD
        recall is nearest ``tpr`` (calibration_tools.py:155-157).

    Raises:
        ImageNetXError: for an unknown convention, an empty class or a NaN
    """
    conv = get_convention(convention)
    return _FPR[conv.name](_tally(id_scores, ood_scores), tpr)


def aupr(id_scores, ood_scores, positive: str = "ood", method: str = "trapezoid") -> float:
    """Area under the precision-recall curve with ``positive`` (``"id"``:
    score ``s``, AUPR-In; ``"ood"``: score ``-s``, AUPR-Out) as the positive
    class; ``method`` ``"trapezoid"`` (OpenOOD: ``auc(recall, precision)``,
    metrics.py:51-59) or ``"average_precision"``
    (``average_precision_score``, Hendrycks et al.).

    Raises:
        ImageNetXError: for another ``positive`` or ``method``, an empty
            class or a NaN
    """
    if positive not in ("id", "ood"):
        raise ImageNetXError(f"`positive` is '{positive}': use 'id' or 'ood'")
    if method not in ("trapezoid", "average_precision"):
        raise ImageNetXError(f"`method` is '{method}': use 'trapezoid' or 'average_precision'")
    t = _tally(id_scores, ood_scores)
    return _aupr_in(t, method) if positive == "id" else _aupr_out(t, method)


# --- all four, with intervals ------------------------------------------------


@dataclass(frozen=True)
class OODMetrics:
    """A detector's four metrics on one ID set against one OOD set.

    Attributes:
        auroc: area under the ROC curve (either class positive)
        fpr95: false positive rate at ``tpr`` true positive rate; its
            positive class is :attr:`positive`
        aupr_in: area under the precision-recall curve, ID positive
        aupr_out: the same, OOD positive (score ``-s``)
        convention: the name in :data:`CONVENTIONS`
        n_id, n_ood: the images of each class
        tpr (0.95): the true positive rate of ``fpr95``
        intervals: ``{metric: (low, high)}``, percentile bootstrap
            intervals (empty without a bootstrap)
        level (0.95), resamples, seed: the bootstrap's settings
    """

    auroc: float
    fpr95: float
    aupr_in: float
    aupr_out: float
    convention: str
    n_id: int
    n_ood: int
    tpr: float = TPR_LEVEL
    intervals: Mapping[str, Tuple[float, float]] = field(default_factory=dict)
    level: float = INTERVAL_LEVEL
    resamples: int = 0
    seed: int = BOOTSTRAP_SEED

    @property
    def positive(self) -> str:
        """The positive class of :attr:`fpr95` (``"ood"`` or ``"id"``)."""
        return CONVENTIONS[self.convention].positive

    @property
    def aupr_method(self) -> str:
        """``"trapezoid"`` or ``"average_precision"``."""
        return CONVENTIONS[self.convention].aupr

    def to_dict(self) -> dict:
        """JSON-ready: the four metrics, the convention and the positive
        class of the FPR, the counts and the intervals."""
        out = {name: to_json(getattr(self, name)) for name in METRICS}
        out.update(
            convention=self.convention, positive=self.positive, aupr=self.aupr_method,
            tpr=self.tpr, n_id=self.n_id, n_ood=self.n_ood)
        if self.intervals:
            out["intervals"] = {k: [to_json(lo), to_json(hi)]
                                for k, (lo, hi) in self.intervals.items()}
            out["interval"] = {"level": self.level, "resamples": self.resamples,
                               "seed": self.seed}
        return out


def ood_metrics(
    id_scores,
    ood_scores,
    convention: str = "openood",
    tpr: float = TPR_LEVEL,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = INTERVAL_LEVEL,
) -> OODMetrics:
    """AUROC, FPR@95, AUPR-In and AUPR-Out of a detector's scores (higher =
    more in-distribution) under ``convention``, with bootstrap intervals.

    The bootstrap is stratified: each of ``resamples`` resamples draws
    ``n_id`` ID and ``n_ood`` OOD images with replacement
    (``np.random.default_rng(seed)``, ID first), and recomputes the four
    metrics; each interval is the central ``level`` percentile range.

    Args:
        id_scores, ood_scores: ``(n_id,)`` and ``(n_ood,)`` scores
        convention ("openood"): one of :data:`CONVENTIONS`
        tpr (0.95): the true positive rate of the FPR
        resamples (1000): bootstrap resamples; 0 for none
        seed (0), level (0.95): the bootstrap's seed and interval level

    Raises:
        ImageNetXError: for an unknown convention, an empty class, or a
            score that is NaN or infinite
    """
    conv = get_convention(convention)
    id_x, ood_x = _pair(id_scores, ood_scores)
    values, id_index, ood_index = _groups(id_x, ood_x)
    point = _all(_recount(values, id_index, ood_index), conv, tpr)
    intervals = {}
    if resamples > 0:
        rng = np.random.default_rng(seed)
        draws = np.empty((resamples, len(METRICS)))
        for r in range(resamples):
            i = id_index[rng.integers(0, len(id_index), len(id_index))]
            o = ood_index[rng.integers(0, len(ood_index), len(ood_index))]
            draws[r] = _all(_recount(values, i, o), conv, tpr)
        tail = (1 - level) / 2
        low, high = np.quantile(draws, [tail, 1 - tail], axis=0)
        intervals = {name: (float(low[k]), float(high[k])) for k, name in enumerate(METRICS)}
    return OODMetrics(*point, convention=conv.name, n_id=len(id_x), n_ood=len(ood_x),
                      tpr=tpr, intervals=intervals, level=level,
                      resamples=max(int(resamples), 0), seed=seed)


# --- each benchmark's headline, as its authors compute it --------------------


@dataclass(frozen=True)
class Headline:
    """A benchmark's headline numbers and the parts they are made of.

    Attributes:
        benchmark: ``"ninco"``, ``"imagenet_o"`` or ``"openood"``
        values: ``{name: value}``, fractions in [0, 1]
        parts: ``{part: {name: value}}``: per OOD class (NINCO), per OOD
            set (OpenOOD)
    """

    benchmark: str
    values: Mapping[str, float]
    parts: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready."""
        return {"benchmark": self.benchmark,
                "values": {k: to_json(v) for k, v in self.values.items()},
                "parts": {p: {k: to_json(v) for k, v in d.items()}
                          for p, d in self.parts.items()}}


def ninco_headline(id_scores, ood_scores, ood_classes) -> Headline:
    """NINCO's headline: the mean over its OOD classes of each class's AUROC
    against all ID images (``ood_classes_mean_auroc``, NINCO evaluate.py:
    272-283), and likewise the mean per-class FPR@95 in NINCO's convention.

    Args:
        id_scores: ``(n_id,)`` scores of the ID images
        ood_scores: ``(n_ood,)`` scores of the NINCO images
        ood_classes: ``(n_ood,)`` each NINCO image's OOD class (any
            labels); the classes are those present, sorted

    Raises:
        ImageNetXError: when ``ood_classes`` and ``ood_scores`` differ in
            length, for an empty class, or a NaN
    """
    id_x, ood_x = _pair(id_scores, ood_scores)
    labels = np.asarray(ood_classes).ravel()
    if len(labels) != len(ood_x):
        raise ImageNetXError(
            f"`ood_classes` has {len(labels)} labels for {len(ood_x)} OOD scores: give "
            "one class per OOD score")
    parts = {}
    for c in np.unique(labels):
        t = _tally(id_x, ood_x[labels == c])
        parts[str(c)] = {"auroc": _auroc(t), "fpr95": _fpr_ninco(t, TPR_LEVEL)}
    values = {k: float(np.mean([p[k] for p in parts.values()])) for k in ("auroc", "fpr95")}
    return Headline("ninco", values, parts)


def _masked_msp(logits, columns: np.ndarray, name: str) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 2:
        raise ImageNetXError(f"`{name}` has shape {z.shape}: give (images, classes) logits")
    if len(columns) and columns.max() >= z.shape[1]:
        raise ImageNetXError(
            f"`class_indices` names class {columns.max()}, beyond the {z.shape[1]} columns "
            f"of `{name}`")
    z = z[:, columns]
    # max softmax = 1 / sum exp(z - max z)
    return 1.0 / np.exp(z - z.max(axis=1, keepdims=True)).sum(axis=1)


def imagenet_o_headline(id_logits, ood_logits, class_indices: Sequence[int]) -> Headline:
    """ImageNet-O's headline: the AUPR of anomaly detection by ``-MSP`` over
    the logits of its 200 classes, anomalies positive
    (``average_precision_score``), with the AUROC and FPR@95 of the same
    call (natural-adv-examples eval_many_models.py:76-113 and
    calibration_tools.py:159-170).

    Hendrycks et al. take the ID images to be the ImageNet validation
    images of the same 200 classes (eval_many_models.py:52-64: 10,000
    images); these classes are not ImageNet-A's.

    Args:
        id_logits, ood_logits: ``(n, 1000)`` logits of the ID and
            ImageNet-O images
        class_indices: the 200 ImageNet-1k indices of ImageNet-O's classes

    Raises:
        ImageNetXError: for repeated or out-of-range indices, an empty
            class, or logits that are not 2-D
    """
    columns = np.asarray(class_indices, dtype=np.int64).ravel()
    if not len(columns) or len(np.unique(columns)) != len(columns) or columns.min() < 0:
        raise ImageNetXError(
            "`class_indices` must be distinct ImageNet-1k indices (ImageNet-O's 200)")
    t = _tally(_masked_msp(id_logits, columns, "id_logits"),
               _masked_msp(ood_logits, columns, "ood_logits"))
    values = {"aupr": _aupr_out(t, "average_precision"), "auroc": _auroc(t),
              "fpr95": _fpr_hendrycks(t, TPR_LEVEL)}
    return Headline("imagenet_o", values)


def openood_headline(near: Mapping[str, OODMetrics], far: Mapping[str, OODMetrics]) -> Headline:
    """OpenOOD v1.5's headline: the mean over its near-OOD sets and the mean
    over its far-OOD sets of each set's metrics (evaluator.py ``_eval_ood``:
    ``np.mean(metrics_list, axis=0)``); AUROC is the leaderboard's number.

    Args:
        near, far: ``{set name: metrics}``, each computed against the same
            ID test set with ``convention="openood"`` (ImageNet-1K: near
            SSB-hard, NINCO; far iNaturalist, Textures, OpenImage-O)

    Raises:
        ImageNetXError: for an empty group, or metrics of another convention
    """
    values, parts = {}, {}
    for group, sets in (("near", near), ("far", far)):
        if not sets:
            raise ImageNetXError(f"No {group}-OOD set: give `{group}` at least one")
        for name, m in sets.items():
            if m.convention != "openood":
                raise ImageNetXError(
                    f"The {group}-OOD set '{name}' was scored with convention "
                    f"'{m.convention}': use `convention='openood'` for OpenOOD's headline")
            parts[name] = {k: getattr(m, k) for k in METRICS}
        for k in METRICS:
            values[f"{group}_{k}"] = float(np.mean([getattr(m, k) for m in sets.values()]))
    return Headline("openood", values, parts)
