"""Slice discovery: conjunctions of slices where a model errs far above its
average ("texture x dog", "pose x smaller x background").

The search is SliceLine's (Sagadeeva & Boehm, SIGMOD 2021): a level-wise
walk of the lattice of conjunctions of basic slices (one value of one
slicing), with a minimum support, and pruning by an upper bound on the
score any sub-slice of a slice can reach. It is written here on scipy
sparse matrices instead of using the ``sliceline`` package because

-   our slicings can be multi-valued (an image carries several ImageNet-X
    factors), while ``sliceline`` one-hot encodes one categorical value per
    feature: 16 factor columns would become 32 ``factor = 0/1`` predicates,
    doubling the lattice and reporting ``pose = 0`` slices;
-   extending each kept slice by every basic slice with one sparse product
    (``P.T @ X``, see :func:`find_slices`) gives exact sizes and errors of
    all extensions at once, where ``sliceline`` pairs slices first and
    evaluates each candidate against every image (``X @ S.T``); on 50,000
    images x 1,033 basic slices this is far faster (``perf/discovery.py``);
-   it drops redundant conjunctions (``class = beagle x meta-class = dog`` is
    ``class = beagle``), which ``sliceline`` reports as distinct slices.

Scores (both with a sound upper bound for pruning):

-   ``"bound"`` (default): a multiple-testing-aware lower bound on the error
    ratio: the one-sided Wilson lower confidence bound of the slice's error
    rate at level ``1 - delta / m``, divided by the overall error rate. ``m``
    (the Bonferroni family) counts every conjunction of up to ``max_order``
    basic slices with enough support, ``sum_L C(l, L)``, fixed before any
    error is looked at; a slice ranks high only when it is both large and
    bad enough that its excess error survives the search's own multiplicity.
    Only slices whose bound exceeds 1 (significantly worse than average)
    are kept.
-   ``"sliceline"``: SliceLine's own score,
    ``alpha * (err(S) / err - 1) - (1 - alpha) * (n / |S| - 1)``; kept when
    positive. It favours large slices: on 50,000 images a slice needs
    ``alpha`` near 1 to beat the size term unless it holds thousands.

Each reported slice also carries its exact one-sided binomial p-value
against the overall error rate, Bonferroni-adjusted over the same family,
and a bootstrap interval on its error ratio
(:func:`~imagenetx.metrics.stats.error_ratio_intervals`).
"""

import math
from dataclasses import dataclass, field
from typing import List, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

from imagenetx.metrics.slicing import check_membership
from imagenetx.metrics.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    INTERVAL_LEVEL,
    error_ratio_intervals,
    to_json,
)
from imagenetx.options import (
    DISCOVERY_ALPHA as ALPHA,
    DISCOVERY_MAX_ORDER as MAX_ORDER,
    DISCOVERY_MIN_SUPPORT as MIN_SUPPORT,
    DISCOVERY_SCORES as SCORES,
    DISCOVERY_TOP_K as TOP_K,
)

#: the family-wise error level of the ``bound`` score and the p-values
DELTA = 0.05


@dataclass(frozen=True)
class FoundSlice:
    """One conjunction of slices and how a model does on it.

    Attributes:
        predicates: ``((slicing, value), ...)``, the slices it intersects
        n: images in the conjunction
        errors: the model's mistakes on them
        error_ratio: ``(errors / n) / overall error rate``
        score: the ranking score (see the module docstring)
        p: one-sided exact binomial p-value of ``errors`` against the
            overall error rate
        p_adjusted: ``p`` times the Bonferroni family size, at most 1
        ci_low, ci_high: bootstrap interval on the error ratio (NaN without)
    """

    predicates: Tuple[Tuple[str, object], ...]
    n: int
    errors: int
    error_ratio: float
    score: float
    p: float
    p_adjusted: float
    ci_low: float = math.nan
    ci_high: float = math.nan

    @property
    def order(self) -> int:
        """How many slices it intersects."""
        return len(self.predicates)

    @property
    def error(self) -> float:
        """The model's error rate on it."""
        return self.errors / self.n

    @property
    def name(self) -> str:
        """``"factors=texture x metaclass=dog"``."""
        return " x ".join(f"{s}={v}" for s, v in self.predicates)

    def to_dict(self) -> dict:
        """JSON-ready."""
        return {
            "slice": self.name,
            "predicates": [{"slicing": s, "value": to_json(v)}
                           for s, v in self.predicates],
            "order": self.order,
            "n": self.n,
            "errors": self.errors,
            "error": self.error,
            "error_ratio": to_json(self.error_ratio),
            "ci_low": to_json(self.ci_low),
            "ci_high": to_json(self.ci_high),
            "score": to_json(self.score),
            "p": to_json(self.p),
            "p_adjusted": to_json(self.p_adjusted),
        }


@dataclass(frozen=True)
class SliceSearch:
    """The result of :func:`find_slices`.

    Attributes:
        slices: the top slices, best first
        n: images searched
        errors: the model's mistakes on them
        score: the score ranked by
        alpha: SliceLine's ``alpha`` (``score="sliceline"``)
        delta: the family-wise error level of ``score="bound"``
        max_order, min_support, top_k: the search settings
        family: the Bonferroni family size (conjunctions with enough support
            that the search could report)
        evaluated: conjunctions whose size and errors were computed, per
            order
    """

    slices: Tuple[FoundSlice, ...]
    n: int
    errors: int
    score: str
    alpha: float
    delta: float
    max_order: int
    min_support: int
    top_k: int
    family: int
    evaluated: Tuple[int, ...] = field(default=())

    @property
    def error(self) -> float:
        """The overall error rate."""
        return self.errors / self.n if self.n else math.nan

    def to_dict(self) -> dict:
        """JSON-ready."""
        return {
            "n": self.n, "errors": self.errors, "error": to_json(self.error),
            "score": self.score, "alpha": self.alpha, "delta": self.delta,
            "max_order": self.max_order, "min_support": self.min_support,
            "top_k": self.top_k, "family": self.family,
            "evaluated": list(self.evaluated),
            "slices": [s.to_dict() for s in self.slices],
        }


def _wilson_lower(errors: np.ndarray, size: np.ndarray, z: float) -> np.ndarray:
    """One-sided Wilson lower confidence bound of a binomial rate."""
    e = np.asarray(errors, dtype=np.float64)
    s = np.asarray(size, dtype=np.float64)
    z2 = z * z
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.sqrt(np.maximum(e * (s - e) / s, 0.0) + z2 / 4)
        out = (e + z2 / 2 - z * root) / (s + z2)
    return np.where(s > 0, np.maximum(out, 0.0), 0.0)


class _Scorer:
    """A score and the upper bound of the score of any sub-slice."""

    def __init__(self, kind: str, n: int, errors: int, family: int,
                 min_support: int, alpha: float, delta: float):
        from scipy import stats

        self.kind, self.n, self.sigma, self.alpha = kind, n, min_support, alpha
        self.rate = errors / n
        self.z = float(stats.norm.isf(delta / max(family, 1)))
        # kept only above this: significantly worse than average / positive
        self.floor = 1.0 if kind == "bound" else 0.0

    def score(self, size: np.ndarray, errors: np.ndarray) -> np.ndarray:
        if self.kind == "bound":
            return _wilson_lower(errors, size, self.z) / self.rate
        a = self.alpha
        with np.errstate(invalid="ignore", divide="ignore"):
            return a * (errors / size / self.rate - 1) - (1 - a) * (self.n / size - 1)

    def upper_bound(self, size: np.ndarray, errors: np.ndarray) -> np.ndarray:
        """The best score a sub-slice (size in ``[min_support, size]``,
        errors at most ``min(errors, its size)``) can reach."""
        size = np.asarray(size, dtype=np.float64)
        errors = np.asarray(errors, dtype=np.float64)
        if self.kind == "bound":
            # the bound grows with errors and falls with size at fixed
            # errors: best is an all-error slice, or the smallest allowed
            return self.score(np.maximum(errors, self.sigma), errors)
        # SliceLine's bound: the score is monotone between these sizes
        cands = np.stack([np.full_like(size, self.sigma),
                          np.clip(errors, self.sigma, size), size])
        best = self.score(cands, np.minimum(errors, cands))
        return np.nanmax(best, axis=0)


def _keys(cols: np.ndarray) -> np.ndarray:
    """One comparable key per row of a ``(m, L)`` int64 array."""
    cols = np.ascontiguousarray(cols, dtype=np.int64)
    return cols.view(np.dtype((np.void, 8 * cols.shape[1]))).ravel()


def _lookup(sorted_keys: np.ndarray, order: np.ndarray, query: np.ndarray):
    """Positions (into the unsorted keys) of ``query`` keys; -1 if absent."""
    pos = np.searchsorted(sorted_keys, query)
    pos = np.minimum(pos, len(sorted_keys) - 1)
    found = sorted_keys[pos] == query
    return np.where(found, order[pos], -1)


@dataclass
class _Level:
    """The kept conjunctions of one order."""

    cols: np.ndarray     # (m, L) basic-slice columns, ascending
    size: np.ndarray     # (m,)
    errors: np.ndarray   # (m,)
    rows: sp.csr_matrix  # (n, m) membership (None at the last order)
    expand: np.ndarray   # (m,) bool


def find_slices(
    correct: np.ndarray,
    slicings: Sequence[Tuple[str, Sequence, np.ndarray]],
    max_order: int = MAX_ORDER,
    min_support: int = MIN_SUPPORT,
    top_k: int = TOP_K,
    score: str = "bound",
    alpha: float = ALPHA,
    delta: float = DELTA,
    intervals: bool = True,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = INTERVAL_LEVEL,
) -> SliceSearch:
    """The top conjunctions of slices by a model's excess error.

    A basic slice is one value of one slicing; a conjunction of up to
    ``max_order`` of them is a slice (the images in all of them). Each order
    extends the kept slices of the order below by every basic slice of a
    higher column with one sparse product: for ``P`` (images x slices) and
    ``X`` (images x basic slices, each image's value weighted
    ``1 + (n + 1) * error``), ``P.T @ X`` holds every extension's size
    (remainder) and errors (quotient) exactly. An extension is kept when it
    has ``min_support`` images, and is not redundant: a conjunction no
    smaller than one of its parents (``class x its meta-class``), or with a
    parent that was dropped, says nothing new. A slice is extended further
    only when the upper bound of its sub-slices' score beats the current
    ``top_k``-th score.

    Args:
        correct: ``(n,)`` bool, the model right on each image
        slicings: ``(name, values, membership)`` per slicing, membership an
            ``(n, len(values))`` bool matrix (multi-valued slicings may mark
            several values per image)
        max_order (3): the most slices a conjunction intersects
        min_support (20): the fewest images a reported slice holds
        top_k (10): how many slices to report
        score ("bound"): ``"bound"`` or ``"sliceline"`` (module docstring)
        alpha (0.95): SliceLine's error/size trade-off
        delta (0.05): family-wise error level of the bound and p-values
        intervals (True): bootstrap intervals on the reported error ratios
        resamples, seed, level: the bootstrap settings

    Returns:
        a :class:`SliceSearch`

    Raises:
        ValueError: for inconsistent shapes or settings
    """
    correct = np.asarray(correct, dtype=bool)
    n = len(correct)
    if score not in SCORES:
        raise ValueError(f"unknown score '{score}': use one of {', '.join(SCORES)}")
    if max_order < 1 or top_k < 1 or min_support < 1:
        raise ValueError("max_order, top_k and min_support must be at least 1")
    names, values, blocks = [], [], []
    for name, vals, membership in slicings:
        blocks.append(check_membership(correct, membership, vals))
        names += [name] * len(vals)
        values += list(vals)
    err = (~correct).astype(np.int64)
    total_errors = int(err.sum())
    settings = dict(n=n, errors=total_errors, score=score, alpha=alpha,
                    delta=delta, max_order=max_order, min_support=min_support,
                    top_k=top_k)
    x = sp.hstack([sp.csr_matrix(b) for b in blocks] or [sp.csr_matrix((n, 0))],
                  format="csr", dtype=np.float64)
    size1 = np.asarray(x.sum(axis=0)).ravel().astype(np.int64)
    # a basic slice holding every image is the empty conjunction again
    basic = np.flatnonzero((size1 >= min_support) & (size1 < n))
    family = sum(math.comb(len(basic), k) for k in range(1, max_order + 1))
    if total_errors == 0 or not len(basic):
        return SliceSearch((), family=family, **settings)

    scorer = _Scorer(score, n, total_errors, family, min_support, alpha, delta)
    x = x[:, basic]
    weighted = sp.csr_matrix(x.multiply((1 + (n + 1) * err)[:, None]))
    errors1 = np.asarray(weighted.sum(axis=0)).ravel().astype(np.int64) // (n + 1)

    top = _Top(top_k, scorer.floor)
    cur = _Level(np.arange(len(basic))[:, None], size1[basic], errors1, x,
                 np.ones(len(basic), bool))
    top.add(cur.cols, cur.size, cur.errors, scorer.score(cur.size, cur.errors))
    evaluated = [len(basic)]
    for order in range(2, max_order + 1):
        cur.expand = scorer.upper_bound(cur.size, cur.errors) > top.threshold
        if not cur.expand.any():
            break
        cur = _extend(cur, x, weighted, n, min_support,
                      build_rows=order < max_order)
        evaluated.append(len(cur.size))
        if not len(cur.size):
            break
        top.add(cur.cols, cur.size, cur.errors,
                scorer.score(cur.size, cur.errors))

    found = top.result()
    slices = _describe(found, basic, names, values, correct, total_errors,
                       family, intervals, resamples, seed, level)
    return SliceSearch(tuple(slices), family=family,
                       evaluated=tuple(evaluated), **settings)


def _extend(cur: _Level, x: sp.csr_matrix, weighted: sp.csr_matrix, n: int,
            min_support: int, build_rows: bool) -> _Level:
    """The kept one-slice extensions of the expanded slices of ``cur``."""
    product = (cur.rows.T @ weighted).tocoo()
    parent = product.row.astype(np.int64)
    col = product.col.astype(np.int64)
    value = np.rint(product.data).astype(np.int64)
    size, errors = value % (n + 1), value // (n + 1)
    keep = (cur.expand[parent] & (col > cur.cols[parent, -1])
            & (size >= min_support))
    parent, col, size, errors = parent[keep], col[keep], size[keep], errors[keep]
    cols = np.column_stack([cur.cols[parent], col])

    # every parent (drop one column) must be kept and larger
    order = np.argsort(_keys(cur.cols), kind="stable")
    sorted_keys = _keys(cur.cols)[order]
    ok = np.ones(len(size), bool)
    width = cols.shape[1]
    for drop in range(width):
        if drop == width - 1:
            idx = parent
        else:
            idx = _lookup(sorted_keys, order,
                          _keys(np.delete(cols, drop, axis=1)))
        ok &= idx >= 0
        ok[ok] &= size[ok] < cur.size[idx[ok]]
    parent, col, cols = parent[ok], col[ok], cols[ok]
    size, errors = size[ok], errors[ok]

    new_rows = _child_rows(cur.rows, x, parent, col) if build_rows else None
    return _Level(cols, size, errors, new_rows, np.zeros(len(size), bool))


def _child_rows(rows: sp.csr_matrix, x: sp.csr_matrix, parent: np.ndarray,
                col: np.ndarray) -> sp.csr_matrix:
    """The ``(n, len(parent))`` membership of the children ``parent[i] x
    col[i]``: each image's (slice, basic slice) pairs, the same pairs the
    product ``rows.T @ x`` sums, looked up among the children."""
    n, width = x.shape
    per_slice, per_basic = np.diff(rows.indptr), np.diff(x.indptr)
    count = per_slice * per_basic
    image = np.repeat(np.arange(n), count)
    k = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    slice_ = rows.indices[rows.indptr[image] + k // per_basic[image]]
    basic = x.indices[x.indptr[image] + k % per_basic[image]]
    wanted = parent * width + col
    order = np.argsort(wanted)
    pos = np.searchsorted(wanted[order], slice_.astype(np.int64) * width + basic)
    pos = np.minimum(pos, len(order) - 1)
    hit = wanted[order][pos] == slice_.astype(np.int64) * width + basic
    return sp.csr_matrix(
        (np.ones(int(hit.sum())), (image[hit], order[pos[hit]])),
        shape=(n, len(parent)))


class _Top:
    """The best ``k`` slices so far (score above ``floor``)."""

    def __init__(self, k: int, floor: float):
        self.k, self.floor = k, floor
        self.items: List[tuple] = []  # (score, cols, size, errors)

    @property
    def threshold(self) -> float:
        """What a new slice's score must beat to enter."""
        if len(self.items) < self.k:
            return self.floor
        return max(self.floor, self.items[-1][0])

    def add(self, cols, size, errors, scores) -> None:
        good = np.flatnonzero(np.nan_to_num(scores, nan=-np.inf) > self.threshold)
        if not len(good):
            return
        # at most k can enter: the best k of this batch
        if len(good) > self.k:
            good = good[np.argsort(-scores[good], kind="stable")[:self.k]]
        self.items += [(float(scores[i]), tuple(int(c) for c in cols[i]),
                        int(size[i]), int(errors[i])) for i in good]
        # best score first; ties: fewer slices, then column order
        self.items.sort(key=lambda t: (-t[0], len(t[1]), t[1]))
        del self.items[self.k:]

    def result(self) -> List[tuple]:
        return list(self.items)


def _describe(found, basic, names, values, correct, total_errors, family,
              intervals, resamples, seed, level) -> List[FoundSlice]:
    """The reported slices with p-values and intervals."""
    from scipy import stats

    if not found:
        return []
    n_total = len(correct)
    rate = total_errors / n_total
    size = np.array([f[2] for f in found])
    errors = np.array([f[3] for f in found])
    p = stats.binom.sf(errors - 1, size, rate)
    low = high = np.full(len(found), np.nan)
    if intervals:
        low, high = error_ratio_intervals(
            size, size - errors, n_total, n_total - total_errors,
            resamples=resamples, seed=seed, level=level)
    out = []
    for i, (sc, cols, s, e) in enumerate(found):
        predicates = tuple((names[basic[c]], values[basic[c]]) for c in cols)
        out.append(FoundSlice(
            predicates, s, e, (e / s) / rate, sc, float(p[i]),
            float(min(1.0, p[i] * family)), float(low[i]), float(high[i])))
    return out
