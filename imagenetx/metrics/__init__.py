"""Per-factor accuracies, error ratios and their statistics: pure numpy/scipy.

Nothing here knows about FiftyOne: every function takes arrays (correct
flags, a factor matrix, class and meta-class ids, confidences) and returns
tables. :mod:`imagenetx.analysis` pulls those arrays out of a view.

The conventions follow the original ``imagenet_x`` toolkit exactly, so the
numbers reproduce the authors' tables:

    accuracy(factor) = correct images with the factor / images with it
    error_ratio(factor) = (1 - accuracy(factor)) / (1 - accuracy)
    worst_factor = the lowest factor accuracy
    worst_100_classes = accuracy over the images of the 100 classes with the
        lowest accuracy (ties broken as the toolkit's pandas sort breaks them)

What the toolkit lacks is added here, each documented where it is defined:

-   intervals on every error ratio (:func:`error_ratio_intervals`: a seeded
    bootstrap over images, percentile interval)
-   a paired test per factor for two models (:func:`mcnemar`, with Holm's
    correction across factors, :func:`holm`)
-   the Alexander-Govern test across groups of models, as in the paper
    (:func:`alexander_govern`)
-   expected calibration error per factor (:func:`factor_calibration_errors`)
-   each factor's prevalence shift among a model's mistakes
    (:func:`prevalence_shift`)
"""

import math
import warnings
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.classes.imagenet import METACLASSES, NUM_CLASSES, class_table
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.options import CORRECTNESS, REAL_MODES, WHICH

#: factors with fewer images than this get a "few images" flag
MIN_RELIABLE_N = 50

#: bootstrap defaults of :func:`error_ratio_intervals`
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
INTERVAL_LEVEL = 0.95

#: equal-width confidence bins of the expected calibration error
ECE_BINS = 15

#: the toolkit's "worst classes" count
WORST_CLASSES_K = 100

#: McNemar: below this many discordant pairs the exact binomial test is used
MCNEMAR_EXACT_BELOW = 25


# --------------------------------------------------------------------------
# per-factor counts


@dataclass(frozen=True)
class FactorTable:
    """Per-factor accuracy of one model.

    Attributes:
        n: images per factor, in :data:`FACTORS` order
        correct: correct images per factor
        n_total: images overall
        correct_total: correct images overall
        ci_low: lower end of the interval on each error ratio, or None
        ci_high: upper end of the interval on each error ratio, or None
    """

    n: np.ndarray
    correct: np.ndarray
    n_total: int
    correct_total: int
    ci_low: Optional[np.ndarray] = field(default=None, compare=False)
    ci_high: Optional[np.ndarray] = field(default=None, compare=False)

    @property
    def accuracy(self) -> float:
        """Accuracy over all images (the toolkit's ``average``); NaN when
        there is no image."""
        if not self.n_total:
            return math.nan
        return self.correct_total / self.n_total

    @property
    def factor_accuracy(self) -> np.ndarray:
        """Accuracy per factor (NaN where a factor has no image)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.correct / self.n

    @property
    def error_ratio(self) -> np.ndarray:
        """``(1 - accuracy(factor)) / (1 - accuracy)`` per factor."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return (1 - self.factor_accuracy) / (1 - self.accuracy)

    @property
    def few_images(self) -> np.ndarray:
        """Whether each factor has fewer than :data:`MIN_RELIABLE_N` images."""
        return self.n < MIN_RELIABLE_N

    @property
    def worst_factor(self):
        """The factor with the lowest accuracy (None if no factor has an
        image). Ties go to the first in :data:`FACTORS` order."""
        acc = self.factor_accuracy
        if np.isnan(acc).all():
            return None
        return FACTORS[int(np.nanargmin(acc))]

    @property
    def worst_factor_accuracy(self) -> float:
        """The lowest factor accuracy: the toolkit's ``worst_factor``."""
        acc = self.factor_accuracy
        return math.nan if np.isnan(acc).all() else float(np.nanmin(acc))

    @property
    def worst_reliable_factor(self):
        """The factor with the lowest accuracy among those with at least
        :data:`MIN_RELIABLE_N` images, or None."""
        acc = np.where(self.few_images, np.nan, self.factor_accuracy)
        if np.isnan(acc).all():
            return None
        return FACTORS[int(np.nanargmin(acc))]

    def with_intervals(
        self,
        resamples: int = BOOTSTRAP_RESAMPLES,
        seed: int = BOOTSTRAP_SEED,
        level: float = INTERVAL_LEVEL,
    ) -> "FactorTable":
        """This table with bootstrap intervals on its error ratios (see
        :func:`error_ratio_intervals`)."""
        low, high = error_ratio_intervals(
            self.n, self.correct, self.n_total, self.correct_total,
            resamples=resamples, seed=seed, level=level,
        )
        return FactorTable(
            self.n, self.correct, self.n_total, self.correct_total, low, high
        )

    def rows(self) -> list:
        """One dict per factor: factor, n, correct, accuracy, error_ratio,
        ci_low, ci_high, few_images (floats may be NaN)."""
        nan = np.full(len(FACTORS), np.nan)
        low = nan if self.ci_low is None else self.ci_low
        high = nan if self.ci_high is None else self.ci_high
        return [
            {
                "factor": factor,
                "n": int(n),
                "correct": int(c),
                "accuracy": float(acc),
                "error_ratio": float(ratio),
                "ci_low": float(lo),
                "ci_high": float(hi),
                "few_images": bool(n < MIN_RELIABLE_N),
            }
            for factor, n, c, acc, ratio, lo, hi in zip(
                FACTORS, self.n, self.correct, self.factor_accuracy,
                self.error_ratio, low, high,
            )
        ]

    def format(self, title: str = "") -> str:
        """A readable text table, sorted by error ratio."""
        lines = [title] if title else []
        ci = self.ci_low is not None
        lines.append(
            f"{'factor':<18}{'images':>8}{'accuracy':>10}{'error ratio':>13}"
            + (f"{'95% interval':>17}" if ci else "")
        )
        for row in sorted(self.rows(), key=lambda r: -np.nan_to_num(r["error_ratio"])):
            flag = "  (few images)" if row["few_images"] else ""
            interval = (
                f"{_fmt_interval(row['ci_low'], row['ci_high']):>17}" if ci else ""
            )
            lines.append(
                f"{row['factor']:<18}{row['n']:>8,}{row['accuracy']:>10.4f}"
                f"{row['error_ratio']:>13.3f}{interval}{flag}"
            )
        lines.append(
            f"{'all images':<18}{self.n_total:>8,}{self.accuracy:>10.4f}"
            f"{1.0:>13.3f}"
        )
        return "\n".join(lines)


def _fmt_interval(low, high) -> str:
    if low is None or high is None or np.isnan(low) or np.isnan(high):
        return "-"
    return f"[{low:.2f}, {high:.2f}]"


def _check_factors(correct: np.ndarray, factors: np.ndarray) -> np.ndarray:
    factors = np.asarray(factors, dtype=bool)
    if factors.shape != (len(correct), len(FACTORS)):
        raise ValueError(
            f"factors must have shape ({len(correct)}, {len(FACTORS)}), "
            f"not {factors.shape}"
        )
    return factors


def factor_table(
    correct: np.ndarray, factors: np.ndarray, intervals: bool = False, **kwargs
) -> FactorTable:
    """Counts per-factor accuracy.

    Args:
        correct: ``(n,)`` bool array, whether each image is classified
            correctly
        factors: ``(n, 16)`` bool matrix of the factors of each image (the
            top factor: one per row; multi-factor: any number)
        intervals (False): whether to add bootstrap intervals on the error
            ratios; ``kwargs`` go to :func:`error_ratio_intervals`

    Returns:
        a :class:`FactorTable`
    """
    correct = np.asarray(correct, dtype=bool)
    factors = _check_factors(correct, factors)
    table = FactorTable(
        n=factors.sum(axis=0),
        correct=factors[correct].sum(axis=0),
        n_total=len(correct),
        correct_total=int(correct.sum()),
    )
    return table.with_intervals(**kwargs) if intervals else table


def metaclass_tables(
    correct: np.ndarray,
    factors: np.ndarray,
    metaclass_ids: np.ndarray,
    intervals: bool = False,
    **kwargs,
) -> list:
    """Per-factor accuracy within each meta-class (the toolkit's
    ``accuracies_per_factor_metaclass``).

    Args:
        correct: ``(n,)`` bool array
        factors: ``(n, 16)`` bool matrix
        metaclass_ids: ``(n,)`` index into :data:`METACLASSES` of each image
        intervals (False): whether to add bootstrap intervals, computed
            within each meta-class; ``kwargs`` go to
            :func:`error_ratio_intervals`

    Returns:
        a list of 17 :class:`FactorTable`, in :data:`METACLASSES` order; the
        ``accuracy`` of each is the meta-class's own accuracy, the
        denominator of its error ratios
    """
    correct = np.asarray(correct, dtype=bool)
    factors = _check_factors(correct, factors)
    ids = np.asarray(metaclass_ids, dtype=np.int64)
    k = len(METACLASSES)
    if ids.size and (ids.min() < 0 or ids.max() >= k):
        raise ValueError(f"metaclass ids must lie in 0-{k - 1}")
    # one matrix product per count: (17, n) x (n, 16); float64 is exact here
    onehot = np.zeros((len(ids), k))
    onehot[np.arange(len(ids)), ids] = 1.0
    f = factors.astype(np.float64)
    n = (onehot.T @ f).astype(np.int64)
    c = (onehot[correct].T @ f[correct]).astype(np.int64)
    n_total = np.bincount(ids, minlength=k)
    c_total = np.bincount(ids[correct], minlength=k)
    tables = []
    for m in range(k):
        table = FactorTable(n[m], c[m], int(n_total[m]), int(c_total[m]))
        tables.append(table.with_intervals(**kwargs) if intervals else table)
    return tables


# --------------------------------------------------------------------------
# correctness


@dataclass(frozen=True)
class RealSets:
    """ReaL label sets of many images, flattened (CSR layout).

    Attributes:
        flat: all the labels, image after image
        offsets: ``(n + 1,)``; the labels of image ``i`` are
            ``flat[offsets[i]:offsets[i + 1]]``
    """

    flat: np.ndarray
    offsets: np.ndarray

    @classmethod
    def from_lists(cls, lists: Sequence) -> "RealSets":
        """From one list of class indices per image (None is not allowed)."""
        sizes = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        offsets = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        flat = np.fromiter(
            (label for labels in lists for label in labels),
            dtype=np.int64,
            count=int(offsets[-1]),
        )
        return cls(flat, offsets)

    def __len__(self):
        return len(self.offsets) - 1

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def subset(self, mask: np.ndarray) -> "RealSets":
        """The sets of the images where ``mask`` is True."""
        sizes = self.sizes[mask]
        keep = np.repeat(mask, self.sizes)
        offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return RealSets(self.flat[keep], offsets)

    def contains(self, predicted: np.ndarray) -> np.ndarray:
        """Whether each image's set holds its predicted class."""
        predicted = np.asarray(predicted, dtype=np.int64)
        rows = np.repeat(np.arange(len(self)), self.sizes)
        hit = self.flat == predicted[rows]
        return np.bincount(rows[hit], minlength=len(self)) > 0


def real_correct(predicted: np.ndarray, real_labels) -> np.ndarray:
    """Whether each prediction is in the image's ReaL label set.

    This is the original toolkit's convention (``paper`` mode): an image
    whose ReaL set is empty counts as wrong.

    Args:
        predicted: ``(n,)`` predicted class indices
        real_labels: ``n`` lists of valid class indices, or a
            :class:`RealSets`

    Returns:
        a ``(n,)`` bool array
    """
    if not isinstance(real_labels, RealSets):
        real_labels = RealSets.from_lists(real_labels)
    return real_labels.contains(predicted)


def metaclass_correct(predicted: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Whether the predicted class lies in the true class's meta-class (two
    classes of "other" count as the same meta-class, as in the toolkit)."""
    mc = class_table().metaclass_index
    return mc[np.asarray(predicted)] == mc[np.asarray(truth)]


def correctness(
    predicted: np.ndarray,
    truth: np.ndarray = None,
    correct: str = "class",
    real_labels=None,
    real_mode: str = "clean",
):
    """Whether each prediction is correct, and which images count.

    Args:
        predicted: ``(n,)`` predicted class indices, all in 0-999
        truth: ``(n,)`` true class indices (for ``class`` and ``metaclass``)
        correct ("class"): ``"class"`` (exact class), ``"metaclass"`` (same
            meta-class) or ``"real"`` (in the ReaL label set)
        real_labels: the ReaL sets (lists or :class:`RealSets`), for
            ``real``
        real_mode ("clean"): for ``real``: ``"clean"`` leaves images with an
            empty ReaL set out (as the ReaL paper does); ``"paper"`` counts
            them wrong (the original toolkit)

    Returns:
        ``(correct, counted)``: two ``(n,)`` bool arrays; statistics use the
        images where ``counted`` is True
    """
    check_modes(correct=correct, real_mode=real_mode)
    predicted = np.asarray(predicted, dtype=np.int64)
    if predicted.size and (predicted.min() < 0 or predicted.max() >= NUM_CLASSES):
        raise ImageNetXError(
            f"Predicted class indices must lie in 0-{NUM_CLASSES - 1}"
        )
    counted = np.ones(len(predicted), dtype=bool)
    if correct == "real":
        if not isinstance(real_labels, RealSets):
            real_labels = RealSets.from_lists(real_labels)
        if real_mode == "clean":
            counted = real_labels.sizes > 0
        return real_labels.contains(predicted), counted
    truth = np.asarray(truth, dtype=np.int64)
    if correct == "metaclass":
        return metaclass_correct(predicted, truth), counted
    return predicted == truth, counted


def check_modes(which: str = "top", correct: str = "class", real_mode: str = "clean"):
    """Raises ImageNetXError naming the choices for an unknown mode."""
    for name, value, choices in (
        ("factor labels (which)", which, WHICH),
        ("correctness", correct, CORRECTNESS),
        ("ReaL mode", real_mode, REAL_MODES),
    ):
        if value not in choices:
            raise ImageNetXError(
                f"Unknown {name} '{value}': use one of {', '.join(choices)}"
            )


# --------------------------------------------------------------------------
# uncertainty


def error_ratio_intervals(
    n: np.ndarray,
    correct: np.ndarray,
    n_total: int,
    correct_total: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = INTERVAL_LEVEL,
):
    """Percentile bootstrap intervals on each factor's error ratio.

    The bootstrap resamples images with replacement (``resamples`` times,
    from ``np.random.default_rng(seed)``) and recomputes each error ratio,
    denominator included. A factor's error ratio depends only on four
    counts: images with the factor that are right / wrong, images without
    it that are right / wrong. Under resampling of images those four counts
    follow exactly a multinomial distribution with the observed proportions,
    so they are drawn directly: the same bootstrap distribution as
    resampling the image indices, at a cost independent of the number of
    images, and for multi-factor labels too (each factor's interval is
    marginal). Resamples in which a factor has no image are left out of its
    interval. The interval is the central ``level`` percentile range.

    The result depends only on the counts and the seed: not on image order,
    nor on which other models or factors are computed beside it.

    Args:
        n, correct: ``(16,)`` images and correct images per factor
        n_total, correct_total: images and correct images overall
        resamples (1000), seed (0), level (0.95): the bootstrap settings

    Returns:
        ``(low, high)``: two ``(16,)`` float arrays, NaN where a factor has
        no image or the model makes no mistake
    """
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(correct, dtype=np.int64)
    low = np.full(len(n), np.nan)
    high = np.full(len(n), np.nan)
    wrong_total = n_total - correct_total
    if n_total == 0 or wrong_total == 0:
        return low, high
    # the four cells: factor & right, factor & wrong, other & right,
    # other & wrong; a multinomial draw is drawn as the equivalent chain of
    # conditional binomials, vectorised over resamples and factors
    cells = np.stack(
        [c, n - c, correct_total - c, wrong_total - (n - c)], axis=1
    ).astype(np.float64) / n_total
    rng = np.random.default_rng(seed)
    shape = (resamples, len(n))
    left = np.full(shape, n_total, dtype=np.int64)
    draws = []
    for k in range(3):
        mass = cells[:, k:].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            q = np.clip(np.where(mass > 0, cells[:, k] / mass, 0.0), 0.0, 1.0)
        x = rng.binomial(left, q)
        draws.append(x)
        left = left - x
    fr, fw, ow = draws[0], draws[1], left
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (fw / (fr + fw)) * (n_total / (fw + ow))
    ratio[~np.isfinite(ratio)] = np.nan
    tail = (1 - level) / 2
    low, high = _nan_quantiles(ratio, tail, 1 - tail)
    has = n > 0
    low[~has] = np.nan
    high[~has] = np.nan
    return low, high


def _nan_quantiles(values: np.ndarray, lo: float, hi: float):
    """Column-wise quantiles ignoring NaN, numpy's default (linear)
    method: ``np.nanquantile(values, [lo, hi], axis=0)``, vectorised."""
    ordered = np.sort(values, axis=0)  # NaN last
    count = (~np.isnan(values)).sum(axis=0)
    cols = np.arange(values.shape[1])
    out = []
    for q in (lo, hi):
        pos = q * np.maximum(count - 1, 0)
        below = np.floor(pos).astype(np.int64)
        above = np.minimum(below + 1, np.maximum(count - 1, 0))
        frac = pos - below
        a = ordered[below, cols]
        b = ordered[above, cols]
        value = a + (b - a) * frac
        out.append(np.where(count > 0, value, np.nan))
    return out


# --------------------------------------------------------------------------
# the toolkit's other columns


def class_counts(correct: np.ndarray, classes: np.ndarray):
    """Images and correct images per class (0-999)."""
    classes = np.asarray(classes, dtype=np.int64)
    n = np.bincount(classes, minlength=NUM_CLASSES)
    c = np.bincount(classes[np.asarray(correct, bool)], minlength=NUM_CLASSES)
    return n, c


def worst_classes_accuracies(
    corrects: Sequence, classes: Sequence, k: int = WORST_CLASSES_K
) -> np.ndarray:
    """Accuracy on the images of each model's ``k`` worst classes, exactly
    as the toolkit's ``worst_k_class_acc`` computes it for these models.

    The toolkit takes per-class accuracies (classes with images, in class
    order), concatenates them over the models in the order given (the
    toolkit's is sorted by model name), sorts the whole array once with
    pandas' default unstable quicksort, and keeps each model's first ``k``.
    That is replicated here with ``np.argsort(kind="quicksort")`` on the
    same array, so ties are broken as the toolkit breaks them on this
    machine. The result depends on the tie order only where tied classes at
    the cut have different image counts.

    Args:
        corrects: one ``(n_m,)`` bool array per model
        classes: the matching ``(n_m,)`` class index arrays
        k (100): how many worst classes

    Returns:
        one accuracy per model
    """
    values, owners, counts = [], [], []
    for m, (correct, cls) in enumerate(zip(corrects, classes)):
        n, c = class_counts(correct, cls)
        present = n > 0
        values.append(c[present] / n[present])
        owners.append(np.full(int(present.sum()), m))
        counts.append(np.stack([n[present], c[present]], axis=1))
    if not values:
        return np.array([])
    order = np.argsort(np.concatenate(values), kind="quicksort")
    owner = np.concatenate(owners)[order]
    count = np.concatenate(counts)[order]
    result = np.full(len(values), np.nan)
    for m in range(len(values)):
        chosen = count[owner == m][:k]
        if len(chosen):
            result[m] = chosen[:, 1].sum() / chosen[:, 0].sum()
    return result


def worst_classes_accuracy(
    correct: np.ndarray, classes: np.ndarray, k: int = WORST_CLASSES_K
) -> float:
    """Accuracy on the images of the ``k`` classes with the lowest accuracy
    (the toolkit's ``worst_100_classes`` for one model); see
    :func:`worst_classes_accuracies`."""
    return float(worst_classes_accuracies([correct], [classes], k)[0])


def prevalence_shift(correct: np.ndarray, factors: np.ndarray):
    """Each factor's share among a model's mistakes against its share among
    all images: the toolkit's ``Prevalence.compute_misclassification_shift``.

    A share is the factor's count over the summed counts of all factors
    (for top-factor labels that is the share of images).

    Returns:
        ``(share_of_mistakes, share_of_images, shift)``, three ``(16,)``
        arrays; ``shift = share_of_mistakes / share_of_images - 1`` (0 where
        undefined, as in the toolkit): +0.5 means the factor is 50% more
        common among mistakes than among all images
    """
    correct = np.asarray(correct, dtype=bool)
    factors = _check_factors(correct, factors)
    wrong = factors[~correct].sum(axis=0)
    every = factors.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        share_wrong = wrong / wrong.sum()
        share_all = every / every.sum()
        shift = (share_wrong - share_all) / share_all
    return share_wrong, share_all, np.where(np.isnan(shift), 0.0, shift)


def calibration_error(
    correct: np.ndarray, confidence: np.ndarray, n_bins: int = ECE_BINS
) -> float:
    """Expected calibration error: the toolkit's
    ``estimated_calibration_error``.

    Confidences fall into ``n_bins`` equal-width bins of [0, 1] (a value on
    an inner edge goes to the lower bin); the ECE is the image-weighted mean
    over non-empty bins of ``|accuracy - mean confidence|``.
    """
    return float(
        factor_calibration_errors(
            correct, confidence, np.ones((len(correct), 1), bool), n_bins
        )[0]
    )


def factor_calibration_errors(
    correct: np.ndarray,
    confidence: np.ndarray,
    factors: np.ndarray,
    n_bins: int = ECE_BINS,
) -> np.ndarray:
    """Expected calibration error (see :func:`calibration_error`) over the
    images of each factor; NaN where a factor has no image.

    Args:
        correct: ``(n,)`` bool
        confidence: ``(n,)`` confidence of the predicted class, in [0, 1]
        factors: ``(n, m)`` bool matrix (usually ``m = 16``)
        n_bins (15): equal-width bins

    Returns:
        a ``(m,)`` float array
    """
    correct = np.asarray(correct, dtype=np.float64)
    confidence = np.asarray(confidence, dtype=np.float64)
    factors = np.asarray(factors, dtype=bool)
    m = factors.shape[1]
    bins = np.linspace(0.0, 1.0, n_bins + 1)
    binids = np.searchsorted(bins[1:-1], confidence)
    rows, cols = np.nonzero(factors)
    key = cols * n_bins + binids[rows]
    size = m * n_bins
    total = np.bincount(key, minlength=size).reshape(m, n_bins)
    conf = np.bincount(key, weights=confidence[rows], minlength=size).reshape(m, n_bins)
    right = np.bincount(key, weights=correct[rows], minlength=size).reshape(m, n_bins)
    n = total.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.abs(right / total - conf / total) * (total / n[:, None])
    ece = np.where(total > 0, gap, 0.0).sum(axis=1)
    return np.where(n > 0, ece, np.nan)


# --------------------------------------------------------------------------
# significance


def holm(pvalues: np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment of p-values (NaN entries are left out of
    the family and stay NaN)."""
    p = np.asarray(pvalues, dtype=np.float64)
    adjusted = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if not len(ok):
        return adjusted
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def mcnemar_counts(a_only, b_only, exact_below: int = MCNEMAR_EXACT_BELOW):
    """McNemar's test from discordant counts.

    With fewer than ``exact_below`` discordant pairs the exact two-sided
    binomial test (``min(1, 2 P[X <= min(b, c)])``, ``X ~ Bin(b + c, 1/2)``);
    otherwise the chi-squared test with continuity correction,
    ``(|b - c| - 1)^2 / (b + c)`` on one degree of freedom.

    Returns:
        ``(statistic, pvalue, method)``: arrays; the statistic is NaN for the
        exact test; method is ``"exact"`` or ``"chi2"``
    """
    from scipy import stats

    b = np.atleast_1d(np.asarray(a_only, dtype=np.int64))
    c = np.atleast_1d(np.asarray(b_only, dtype=np.int64))
    d = b + c
    exact = d < exact_below
    statistic = np.full(b.shape, np.nan)
    p = np.ones(b.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        chi = (np.abs(b - c) - 1.0) ** 2 / d
    big = ~exact
    statistic[big] = chi[big]
    p[big] = stats.chi2.sf(chi[big], 1)
    small = exact & (d > 0)
    p[small] = np.minimum(
        1.0, 2 * stats.binom.cdf(np.minimum(b, c)[small], d[small], 0.5)
    )
    method = np.where(exact, "exact", "chi2")
    return statistic, p, method


@dataclass(frozen=True)
class PairedTest:
    """McNemar's test of two models on the same images, per factor.

    Attributes:
        n: ``(16,)`` images with each factor
        a_only: ``(16,)`` images model A gets right and model B wrong
        b_only: ``(16,)`` images model B gets right and model A wrong
        statistic: ``(16,)`` chi-squared statistic (NaN for exact tests)
        p: ``(16,)`` p-values
        p_holm: ``(16,)`` p-values after Holm's correction over the factors
            that have images
        method: ``(16,)`` ``"exact"`` or ``"chi2"``
        overall: the same test over all images: dict with n, a_only,
            b_only, statistic, p, method
    """

    n: np.ndarray
    a_only: np.ndarray
    b_only: np.ndarray
    statistic: np.ndarray
    p: np.ndarray
    p_holm: np.ndarray
    method: np.ndarray
    overall: dict

    def to_dict(self) -> dict:
        """JSON-ready: {"overall": {...}, "factors": {FACTOR: {...}}}."""
        return {
            "overall": {k: _json(v) for k, v in self.overall.items()},
            "factors": {
                f: {
                    "n": int(self.n[i]),
                    "a_only": int(self.a_only[i]),
                    "b_only": int(self.b_only[i]),
                    "statistic": _json(self.statistic[i]),
                    "p": _json(self.p[i]),
                    "p_holm": _json(self.p_holm[i]),
                    "method": str(self.method[i]),
                }
                for i, f in enumerate(FACTORS)
            },
        }


def mcnemar(
    correct_a: np.ndarray,
    correct_b: np.ndarray,
    factors: np.ndarray,
    exact_below: int = MCNEMAR_EXACT_BELOW,
) -> PairedTest:
    """Paired McNemar test per factor: do two models differ in accuracy on
    the images of the factor? See :func:`mcnemar_counts` for the test and
    :func:`holm` for the correction (over the factors that have images).

    Args:
        correct_a, correct_b: ``(n,)`` bool, the two models on the same
            images
        factors: ``(n, 16)`` bool matrix
    """
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape:
        raise ValueError("the two models must be scored on the same images")
    factors = _check_factors(a, factors)
    n = factors.sum(axis=0)
    a_only = factors[a & ~b].sum(axis=0)
    b_only = factors[b & ~a].sum(axis=0)
    stat, p, method = mcnemar_counts(a_only, b_only, exact_below)
    p = np.where(n > 0, p, np.nan)
    ta, tb = int((a & ~b).sum()), int((b & ~a).sum())
    ostat, op, omethod = mcnemar_counts(ta, tb, exact_below)
    overall = {
        "n": len(a), "a_only": ta, "b_only": tb,
        "statistic": float(ostat[0]), "p": float(op[0]),
        "method": str(omethod[0]),
    }
    return PairedTest(n, a_only, b_only, stat, p, holm(p), method, overall)


def alexander_govern(groups: dict) -> dict:
    """The Alexander-Govern test per factor, as the paper uses it: do groups
    of models (e.g. model families) differ in mean error ratio on a factor?
    Each group's samples are its models' error ratios on that factor
    (``scipy.stats.alexandergovern``; the toolkit's ``model_comparison``).

    Args:
        groups: ``{group name: (models, 16) array of error ratios}``; at
            least two groups of at least two models each

    Returns:
        ``{"statistic": (16,) array, "p": (16,) array}``; NaN where a
        factor's error ratios are undefined or constant within a group
    """
    from scipy import stats

    arrays = [np.atleast_2d(np.asarray(g, dtype=np.float64)) for g in groups.values()]
    if len(arrays) < 2 or any(a.shape[0] < 2 for a in arrays):
        sizes = ", ".join(f"{k}: {a.shape[0]}" for k, a in zip(groups, arrays))
        raise ImageNetXError(
            "The Alexander-Govern test needs at least two groups of at least "
            f"two models each (got {sizes or 'none'})"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.alexandergovern(*arrays, axis=0)
    return {
        "statistic": np.asarray(res.statistic, dtype=np.float64),
        "p": np.asarray(res.pvalue, dtype=np.float64),
    }


# --------------------------------------------------------------------------
# a model's whole summary, JSON-ready


def _json(x):
    """A JSON value: numpy scalars to Python, NaN and infinities to None."""
    if x is None:
        return None
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    return x


def table_dict(table: FactorTable, extra: dict = None) -> dict:
    """A :class:`FactorTable` as the JSON shape of the ``ratios`` command:
    {"n", "correct", "accuracy", "worst_factor", "worst_factor_accuracy",
    "worst_reliable_factor", "factors": {FACTOR: {"n", "correct",
    "accuracy", "error_ratio", "ci_low", "ci_high", "few_images", ...}}}.

    Args:
        table: the table
        extra: ``{key: (16,) array}`` further per-factor columns
    """
    factors = {}
    for i, row in enumerate(table.rows()):
        name = row.pop("factor")
        entry = {k: _json(v) for k, v in row.items()}
        for key, values in (extra or {}).items():
            entry[key] = _json(values[i])
        factors[name] = entry
    return {
        "n": int(table.n_total),
        "correct": int(table.correct_total),
        "accuracy": _json(table.accuracy),
        "worst_factor": table.worst_factor,
        "worst_factor_accuracy": _json(table.worst_factor_accuracy),
        "worst_reliable_factor": table.worst_reliable_factor,
        "factors": factors,
    }


def summarize_models(
    corrects: dict,
    factors: dict,
    classes: dict,
    metaclass_ids: dict = None,
    confidences: dict = None,
    intervals: bool = True,
    by_metaclass: bool = False,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = INTERVAL_LEVEL,
    k_worst: int = WORST_CLASSES_K,
) -> dict:
    """Everything the ``ratios`` command reports, for several models.

    Each model comes with its own images (the ones it has a prediction for
    and that count in the chosen correctness mode), so every argument is a
    dict keyed by model name.

    Args:
        corrects: ``{model: (n_m,) bool}``
        factors: ``{model: (n_m, 16) bool}``
        classes: ``{model: (n_m,) true class index}`` (for the worst
            classes)
        metaclass_ids: ``{model: (n_m,) meta-class index}``, needed when
            ``by_metaclass``
        confidences: ``{model: (n_m,) float}`` or None; a model whose
            confidences are missing gets no calibration error
        intervals (True): whether to compute bootstrap intervals
        by_metaclass (False): whether to add the meta-class x factor tables
        resamples, seed, level: the bootstrap settings
        k_worst (100): the number of worst classes

    Returns:
        ``{model: {"n", "correct", "accuracy", "worst_factor",
        "worst_factor_accuracy", "worst_reliable_factor",
        "worst_100_classes", "ece", "factors": {FACTOR: {"n", "correct",
        "accuracy", "error_ratio", "ci_low", "ci_high", "few_images",
        "share_of_mistakes", "share_of_images", "prevalence_shift",
        "ece"}}, "metaclasses": {METACLASS: {same without
        worst_100_classes/ece/shares}} (only when by_metaclass)}}``
    """
    names = list(corrects)
    # the toolkit sorts all its models' class accuracies together, in the
    # order of its groupby: by model name
    ordered = sorted(names)
    worst = dict(zip(ordered, worst_classes_accuracies(
        [corrects[m] for m in ordered], [classes[m] for m in ordered], k_worst
    )))
    boot = dict(resamples=resamples, seed=seed, level=level)
    out = {}
    for m in names:
        correct, fm = corrects[m], factors[m]
        table = factor_table(correct, fm, intervals=intervals, **boot)
        share_wrong, share_all, shift = prevalence_shift(correct, fm)
        extra = {
            "share_of_mistakes": share_wrong,
            "share_of_images": share_all,
            "prevalence_shift": shift,
        }
        conf = None if confidences is None else confidences.get(m)
        ece = math.nan
        if conf is not None and len(conf) and not np.isnan(conf).any():
            extra["ece"] = factor_calibration_errors(correct, conf, fm)
            ece = calibration_error(correct, conf)
        else:
            extra["ece"] = np.full(len(FACTORS), np.nan)
        entry = table_dict(table, extra)
        entry[f"worst_{k_worst}_classes"] = _json(worst[m])
        entry["ece"] = _json(ece)
        if by_metaclass:
            tables = metaclass_tables(
                correct, fm, metaclass_ids[m], intervals=intervals, **boot
            )
            entry["metaclasses"] = {
                name: table_dict(t) for name, t in zip(METACLASSES, tables)
            }
        out[m] = entry
    return out


def prevalence(factors: np.ndarray) -> np.ndarray:
    """The share of images that have each factor (the paper's Figure 2).

    Args:
        factors: ``(n, 16)`` bool matrix of the factors of each image
    """
    return np.asarray(factors, dtype=bool).mean(axis=0)


def cooccurrence(factors: np.ndarray) -> np.ndarray:
    """``P(column factor | row factor)`` over images (the paper's Figure 8);
    0 in the rows of factors without images.

    Args:
        factors: ``(n, 16)`` bool matrix of the factors of each image
    """
    counts = np.asarray(factors, dtype=np.int64)
    both = counts.T @ counts
    with np.errstate(invalid="ignore", divide="ignore"):
        given = both / np.diag(both)[:, None]
    return np.nan_to_num(given)
