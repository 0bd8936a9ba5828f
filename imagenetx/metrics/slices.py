"""Per-slice accuracy and error ratio of one model, and the toolkit's other
columns (worst classes, prevalence shift, prevalence, co-occurrence).

The conventions follow the original ``imagenet_x`` toolkit exactly, so the
numbers reproduce the authors' tables when the slices are its factors:

    accuracy(slice) = correct images in the slice / images in it
    error_ratio(slice) = (1 - accuracy(slice)) / (1 - accuracy)
    worst slice = the lowest slice accuracy
    worst_100_classes = accuracy over the images of the 100 classes with the
        lowest accuracy (ties broken as the toolkit's pandas sort breaks them)
"""

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from imagenetx.metrics.slicing import check_membership
from imagenetx.metrics.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    INTERVAL_LEVEL,
    error_ratio_intervals,
)

#: slices with fewer images than this get a "few images" flag
MIN_RELIABLE_N = 50

#: the toolkit's "worst classes" count
WORST_CLASSES_K = 100


@dataclass(frozen=True)
class SliceTable:
    """Per-slice accuracy of one model.

    Attributes:
        names: the slice names, in order
        n: images per slice
        correct: correct images per slice
        n_total: images overall
        correct_total: correct images overall
        ci_low: lower end of the interval on each error ratio, or None
        ci_high: upper end of the interval on each error ratio, or None
    """

    names: tuple
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
    def slice_accuracy(self) -> np.ndarray:
        """Accuracy per slice (NaN where a slice has no image)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.correct / self.n

    @property
    def error_ratio(self) -> np.ndarray:
        """``(1 - accuracy(slice)) / (1 - accuracy)`` per slice."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return (1 - self.slice_accuracy) / (1 - self.accuracy)

    @property
    def few_images(self) -> np.ndarray:
        """Whether each slice has fewer than :data:`MIN_RELIABLE_N` images."""
        return self.n < MIN_RELIABLE_N

    @property
    def worst_slice(self) -> Optional[str]:
        """The slice with the lowest accuracy (None if no slice has an
        image); ties go to the first in order."""
        acc = self.slice_accuracy
        if np.isnan(acc).all():
            return None
        return self.names[int(np.nanargmin(acc))]

    @property
    def worst_slice_accuracy(self) -> float:
        """The lowest slice accuracy: the toolkit's ``worst_factor``."""
        acc = self.slice_accuracy
        return math.nan if np.isnan(acc).all() else float(np.nanmin(acc))

    @property
    def worst_reliable_slice(self) -> Optional[str]:
        """The slice with the lowest accuracy among those with at least
        :data:`MIN_RELIABLE_N` images, or None."""
        acc = np.where(self.few_images, np.nan, self.slice_accuracy)
        if np.isnan(acc).all():
            return None
        return self.names[int(np.nanargmin(acc))]

    def with_intervals(
        self,
        resamples: int = BOOTSTRAP_RESAMPLES,
        seed: int = BOOTSTRAP_SEED,
        level: float = INTERVAL_LEVEL,
    ) -> "SliceTable":
        """This table with bootstrap intervals on its error ratios (see
        :func:`imagenetx.metrics.stats.error_ratio_intervals`)."""
        low, high = error_ratio_intervals(
            self.n, self.correct, self.n_total, self.correct_total,
            resamples=resamples, seed=seed, level=level,
        )
        return SliceTable(self.names, self.n, self.correct, self.n_total,
                          self.correct_total, low, high)

    def rows(self) -> list:
        """One dict per slice: slice, n, correct, accuracy, error_ratio,
        ci_low, ci_high, few_images (floats may be NaN)."""
        nan = np.full(len(self.names), np.nan)
        low = nan if self.ci_low is None else self.ci_low
        high = nan if self.ci_high is None else self.ci_high
        return [
            {
                "slice": name,
                "n": int(n),
                "correct": int(c),
                "accuracy": float(acc),
                "error_ratio": float(ratio),
                "ci_low": float(lo),
                "ci_high": float(hi),
                "few_images": bool(n < MIN_RELIABLE_N),
            }
            for name, n, c, acc, ratio, lo, hi in zip(
                self.names, self.n, self.correct, self.slice_accuracy,
                self.error_ratio, low, high,
            )
        ]

    def format(self, title: str = "", label: str = "slice") -> str:
        """A readable text table, sorted by error ratio; ``label`` heads the
        first column (e.g. ``"factor"``)."""
        lines = [title] if title else []
        ci = self.ci_low is not None
        width = max([18, *(len(str(n)) + 2 for n in self.names)])
        lines.append(
            f"{label:<{width}}{'images':>8}{'accuracy':>10}{'error ratio':>13}"
            + (f"{'95% interval':>17}" if ci else "")
        )
        for row in sorted(self.rows(), key=lambda r: -np.nan_to_num(r["error_ratio"])):
            flag = "  (few images)" if row["few_images"] else ""
            interval = (
                f"{_fmt_interval(row['ci_low'], row['ci_high']):>17}" if ci else ""
            )
            lines.append(
                f"{str(row['slice']):<{width}}{row['n']:>8,}{row['accuracy']:>10.4f}"
                f"{row['error_ratio']:>13.3f}{interval}{flag}"
            )
        lines.append(
            f"{'all images':<{width}}{self.n_total:>8,}{self.accuracy:>10.4f}"
            f"{1.0:>13.3f}"
        )
        return "\n".join(lines)


def _fmt_interval(low, high) -> str:
    if low is None or high is None or np.isnan(low) or np.isnan(high):
        return "-"
    return f"[{low:.2f}, {high:.2f}]"


def slice_table(
    correct: np.ndarray,
    membership: np.ndarray,
    names: Sequence,
    intervals: bool = False,
    **kwargs,
) -> SliceTable:
    """Counts per-slice accuracy.

    Args:
        correct: ``(n,)`` bool array, whether each image is classified
            correctly
        membership: ``(n, k)`` bool matrix, image x slice (one slice per row
            for a single-valued slicing; any number for a multi-valued one)
        names: the ``k`` slice names
        intervals (False): whether to add bootstrap intervals on the error
            ratios; ``kwargs`` go to
            :func:`imagenetx.metrics.stats.error_ratio_intervals`

    Returns:
        a :class:`SliceTable`
    """
    correct = np.asarray(correct, dtype=bool)
    membership = check_membership(correct, membership, names)
    table = SliceTable(
        names=tuple(names),
        n=membership.sum(axis=0),
        correct=membership[correct].sum(axis=0),
        n_total=len(correct),
        correct_total=int(correct.sum()),
    )
    return table.with_intervals(**kwargs) if intervals else table


def group_tables(
    correct: np.ndarray,
    membership: np.ndarray,
    names: Sequence,
    group_ids: np.ndarray,
    n_groups: int,
    intervals: bool = False,
    **kwargs,
) -> list:
    """Per-slice accuracy within each group of images, e.g. each ImageNet-X
    meta-class (the toolkit's ``accuracies_per_factor_metaclass``).

    Args:
        correct: ``(n,)`` bool array
        membership: ``(n, k)`` bool matrix
        names: the ``k`` slice names
        group_ids: ``(n,)`` group index of each image, in ``0..n_groups-1``
        n_groups: the number of groups
        intervals (False): whether to add bootstrap intervals, computed
            within each group

    Returns:
        a list of ``n_groups`` :class:`SliceTable`; the ``accuracy`` of each
        is the group's own accuracy, the denominator of its error ratios
    """
    correct = np.asarray(correct, dtype=bool)
    membership = check_membership(correct, membership, names)
    ids = np.asarray(group_ids, dtype=np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= n_groups):
        raise ValueError(f"group ids must lie in 0-{n_groups - 1}")
    # one matrix product per count: (groups, n) x (n, k); float64 is exact
    onehot = np.zeros((len(ids), n_groups))
    onehot[np.arange(len(ids)), ids] = 1.0
    f = membership.astype(np.float64)
    n = (onehot.T @ f).astype(np.int64)
    c = (onehot[correct].T @ f[correct]).astype(np.int64)
    n_total = np.bincount(ids, minlength=n_groups)
    c_total = np.bincount(ids[correct], minlength=n_groups)
    tables = []
    for g in range(n_groups):
        table = SliceTable(tuple(names), n[g], c[g], int(n_total[g]), int(c_total[g]))
        tables.append(table.with_intervals(**kwargs) if intervals else table)
    return tables


def class_counts(correct: np.ndarray, classes: np.ndarray):
    """Images and correct images per class index (0 to the largest)."""
    classes = np.asarray(classes, dtype=np.int64)
    size = int(classes.max()) + 1 if classes.size else 0
    n = np.bincount(classes, minlength=size)
    c = np.bincount(classes[np.asarray(correct, bool)], minlength=size)
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
    """Each slice's share among a model's mistakes against its share among
    all images: the toolkit's ``Prevalence.compute_misclassification_shift``.

    A share is the factor's count over the summed counts of all factors
    (for top-factor labels that is the share of images).

    Returns:
        ``(share_of_mistakes, share_of_images, shift)``, three ``(k,)``
        arrays; ``shift = share_of_mistakes / share_of_images - 1`` (0 where
        undefined, as in the toolkit): +0.5 means the factor is 50% more
        common among mistakes than among all images
    """
    correct = np.asarray(correct, dtype=bool)
    factors = np.asarray(factors, dtype=bool)
    return prevalence_shift_counts(factors[~correct].sum(axis=0),
                                   factors.sum(axis=0))


def prevalence_shift_counts(wrong: np.ndarray, every: np.ndarray):
    """:func:`prevalence_shift` from counts: ``wrong`` (mistakes) and
    ``every`` (images) per slice, ``(..., k)`` arrays (the last axis is the
    slice; leading axes are e.g. models). A slice table gives them as
    ``n * (1 - accuracy)`` and ``n``.

    Returns:
        ``(share_of_mistakes, share_of_images, shift)``, as
        :func:`prevalence_shift`
    """
    wrong = np.asarray(wrong, dtype=np.float64)
    every = np.asarray(every, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        share_wrong = wrong / wrong.sum(axis=-1, keepdims=True)
        share_all = every / every.sum(axis=-1, keepdims=True)
        shift = (share_wrong - share_all) / share_all
    return share_wrong, share_all, np.where(np.isnan(shift), 0.0, shift)


def prevalence(membership: np.ndarray) -> np.ndarray:
    """The share of images in each slice (the paper's Figure 2).

    Args:
        membership: ``(n, k)`` bool matrix, image x slice
    """
    return np.asarray(membership, dtype=bool).mean(axis=0)


def cooccurrence(membership: np.ndarray) -> np.ndarray:
    """``P(column slice | row slice)`` over images (the paper's Figure 8);
    0 in the rows of slices without images.

    Args:
        membership: ``(n, k)`` bool matrix, image x slice
    """
    counts = np.asarray(membership, dtype=np.int64)
    both = counts.T @ counts
    with np.errstate(invalid="ignore", divide="ignore"):
        given = both / np.diag(both)[:, None]
    return np.nan_to_num(given)
