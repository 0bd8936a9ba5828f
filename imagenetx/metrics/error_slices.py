"""Error-aware slices in an embedding space: groups of similar images on
which a model errs far above its average, whether or not any annotation
names them ("drawings of dogs", "close-ups of fur").

The model is Domino's (Eyuboglu et al., ICLR 2022; ``DominoMixture`` in
``domino/_slice/mixture.py``): a mixture whose components each hold a
diagonal Gaussian over the embeddings (reduced by PCA to 128 dimensions), a
categorical over the true class (``y``) and a categorical over the model's
prediction (``y-hat``, soft: the prediction's probabilities), the two
categorical log-likelihoods weighted by ``y_weight`` and ``y_hat_weight``
(10 and 10, ``domino.discover()``'s), fitted by expectation-maximisation
from responsibilities initialised on the confusion matrix's cells. Its
E-step and M-step are Domino's formula for formula (``tests/
test_error_slices.py`` checks the responsibilities against a transcription
of Domino's code to 1e-6); it is written here in numpy because ``domino``
0.1.5 pins scikit-learn 0.24.2 and imports a removed scikit-learn internal.

Three choices are ours, not ``DominoSlicer``'s:

- the initial cells: Domino's confusion initialisation needs a component
  per cell (``components >= classes**2``, refused otherwise); with more
  cells than components the components start on the most populated cells;
- the slices are the components worse than average on the samples the
  mixture was fitted on, ranked by the Wilson lower bound of their error
  rate there (Domino ranks by ``max(y_hat_probs - y_probs)``, the class most
  over-predicted);
- failures across classes (``across_classes``, the default): Domino's
  class terms make each component one confusion cell, so a failure that
  spans many classes (blurred copies of images of 16 classes) is cut into
  one small component per cell. The same mixture is also fitted without
  the class terms (joined the same way), and the slices of both fits are
  pooled: taken greedily, best first, no sample in two, then ranked by
  their own bounds (``perf/slices.py`` measures both).

A slice is one failure: one component, or components Domino's
initialisation started on the same confusion cell that together are as
coherent as apart (:func:`join_coherent`); two unrelated failures stay two
slices. Each slice's accuracy, size and Wilson interval are measured on
samples the mixture was *not* fitted on (``fit_share`` of the samples, drawn
with ``seed``, fit the PCA and the mixture; every sample then gets its soft
membership, Domino's ``predict_proba``, and its hard one, the most likely
component). ``fit_share=None`` fits on all samples and says so: the numbers
are then those of the samples that chose the slices.
"""

import math
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.stats import to_json, wilson_interval

#: Domino's defaults (``DominoSlicer``): mixture components, PCA dimensions,
#: EM iterations, the noise of the confusion initialisation
COMPONENTS = 25
PCA_DIMENSIONS = 128
MAX_ITER = 100
CONFUSION_NOISE = 1e-3
#: the weights of the true-class and prediction terms (``domino.discover()``'s;
#: ``DominoSlicer``'s own default is 1, its notebooks use 40)
Y_WEIGHT = 10.0
Y_HAT_WEIGHT = 10.0
#: scikit-learn's GaussianMixture defaults, which DominoMixture inherits
REG_COVAR = 1e-6
TOL = 1e-3
#: the share of the samples the mixture is fitted on (the rest measure it)
FIT_SHARE = 0.5
#: slices of one confusion cell are joined when the joined slice's spread is
#: at most this many times the larger part's (:func:`join_coherent`)
SPREAD = 1.25
#: a slice holds at least this many of the samples it was fitted on
MIN_SIZE = 5
#: the images kept per slice as its most typical (highest responsibility)
TYPICAL = 8


@dataclass
class ErrorSlice:
    """One slice (one or more mixture components): its members and the model's
    statistics on the held-out ones.

    Attributes:
        rank: 1 for the slice with the highest error rate
        components: the mixture components it joins (one unless
            :func:`join_coherent` joined some), of Domino's mixture or, when
            ``across_classes``, of the mixture of the embeddings alone
        members: row indices of every sample whose most likely component is
            one of them and that is in no better-ranked slice (fitted and
            held-out alike)
        held_out: the members the mixture was not fitted on (all members
            when it was fitted on all)
        typical: the held-out members most typical of the slice (highest
            responsibility first)
        size, correct: held-out members and their correct predictions
        accuracy: ``correct / size`` (NaN for an empty slice)
        error_ratio: the slice's error rate over the held-out error rate
        interval: the Wilson interval ``(low, high)`` of the accuracy
        fit_size, fit_accuracy: the same on the samples it was fitted on
        centroid: ``(d,)`` mean embedding of the members
    """

    rank: int
    components: list
    members: np.ndarray
    held_out: np.ndarray
    typical: np.ndarray
    size: int
    correct: int
    accuracy: float
    error_ratio: float
    interval: tuple
    fit_size: int
    fit_accuracy: float
    centroid: np.ndarray = field(repr=False)
    #: found by the mixture of the embeddings alone (``across_classes``)
    across_classes: bool = False

    def to_dict(self) -> dict:
        """JSON-ready statistics (without the member rows)."""
        return {"rank": self.rank, "size": self.size, "correct": self.correct,
                "accuracy": to_json(self.accuracy), "error_ratio": to_json(self.error_ratio),
                "interval": [to_json(v) for v in self.interval],
                "members": len(self.members), "fit_size": self.fit_size,
                "fit_accuracy": to_json(self.fit_accuracy),
                "across_classes": self.across_classes}


@dataclass
class ErrorSlices:
    """The slices, best first, and what the fit used (``dimensions``,
    ``iterations``, ``assignment`` and ``probabilities`` are Domino's
    mixture's; with ``across_classes`` the slices found by the mixture without
    class terms index its components, fitted on ``across_dimensions``)."""

    slices: List[ErrorSlice]
    n: int
    #: accuracy on the held-out samples (all samples when fitted on all)
    accuracy: float
    components: int
    dimensions: int
    y_weight: float
    y_hat_weight: float
    iterations: int
    #: ``{"seed", "fit_share", "fit", "held_out"}``: how the samples were
    #: split (``fit_share`` None: fitted on all, measured on the same)
    split: dict
    #: ``(n,)`` True for the samples the mixture was fitted on
    fitted: np.ndarray = field(repr=False)
    #: ``(n,)`` each row's most likely component
    assignment: np.ndarray = field(repr=False)
    #: ``(n, components)`` each row's soft membership (Domino's predict_proba)
    probabilities: np.ndarray = field(repr=False)
    #: whether the mixture without class terms was fitted too and its slices
    #: pooled (``assignment`` and ``probabilities`` are Domino's mixture's)
    across_classes: bool = False
    #: the PCA dimensions of the mixture without class terms (None: not fitted)
    across_dimensions: Optional[int] = None

    @property
    def held_out(self) -> bool:
        """Whether the slices' numbers come from samples not fitted on."""
        return self.split["fit_share"] is not None


def check_embeddings(embeddings, correct, k: int, name: str = "embeddings"):
    """``(embeddings as float, correct as bool)``, or one line saying what is
    wrong with them: not 2-D, rows that do not match ``correct``, NaN or
    infinite rows, ``k`` out of range.

    Raises:
        ImageNetXError: naming ``name`` and what to pass instead
    """
    x = np.asarray(embeddings)
    if x.dtype == object or x.ndim != 2:
        raise ImageNetXError(
            f"`{name}` must be one vector of the same length per sample (an (n, d) "
            f"array), not shape {x.shape}: recompute them with one model")
    x = x.astype(np.float32, copy=False)
    c = np.asarray(correct, dtype=bool)
    if c.shape != (len(x),):
        raise ImageNetXError(
            f"`{name}` has {len(x):,} rows but there are {c.size:,} predictions: pass one "
            "embedding per prediction")
    bad = ~np.isfinite(x).all(axis=1)
    if bad.any():
        raise ImageNetXError(
            f"`{name}` has {int(bad.sum()):,} rows with NaN or infinite values (row "
            f"{int(np.flatnonzero(bad)[0])} first): recompute them, or leave those samples "
            "out of the view")
    if not isinstance(k, (int, np.integer)) or k < 1 or k > len(x):
        raise ImageNetXError(
            f"`k={k}` must be between 1 and the number of samples ({len(x):,}): ask for "
            "fewer slices")
    return x, c


def categorical_terms(correct, targets=None, predicted=None, confidence=None,
                      probabilities=None):
    """Domino's ``y`` and ``y_hat``: ``(y (n, c), y_hat (n, c + 1))``, sparse
    unless ``probabilities`` are given.

    The columns are the classes that occur (true or predicted) and, for
    ``y_hat``, one more: the prediction's probability left to the classes
    that do not occur (with ``confidence`` only: ``1 - confidence``). Without
    ``targets`` and ``predicted``, the task is the correctness: ``y`` one
    class, ``y_hat`` right or wrong.

    Args:
        correct: ``(n,)`` whether the model is right
        targets, predicted: ``(n,)`` true and predicted class indices
        confidence: ``(n,)`` the predicted class's probability (None: 1)
        probabilities: ``(n, classes)`` the prediction's probabilities over
            every class (softmaxed logits); rows index classes by
            ``targets``' indices
    """
    from scipy import sparse  # lazy: start-up

    n = len(correct)
    rows = np.arange(n)
    if targets is None or predicted is None:
        y = sparse.csr_matrix(np.ones((n, 1)))
        y_hat = sparse.csr_matrix(np.stack([np.asarray(correct, float),
                                            1 - np.asarray(correct, float)], axis=1))
        return y, y_hat
    targets = np.asarray(targets, dtype=np.int64)
    predicted = np.asarray(predicted, dtype=np.int64)
    classes, codes = np.unique(np.concatenate([targets, predicted]), return_inverse=True)
    c = len(classes)
    y = sparse.csr_matrix((np.ones(n), (rows, codes[:n])), shape=(n, c))
    if probabilities is not None:
        p = np.asarray(probabilities, dtype=np.float64)[:, classes]
        return y, np.concatenate([p, np.clip(1 - p.sum(axis=1, keepdims=True), 0, 1)], axis=1)
    conf = np.ones(n) if confidence is None else np.nan_to_num(
        np.clip(np.asarray(confidence, dtype=np.float64), 0, 1), nan=1.0)
    y_hat = sparse.csr_matrix(
        (np.concatenate([conf, 1 - conf]), (np.concatenate([rows, rows]),
                                            np.concatenate([codes[n:], np.full(n, c)]))),
        shape=(n, c + 1))
    y_hat.eliminate_zeros()
    if confidence is None or not (conf < 1).any():
        y_hat = y_hat[:, :c]  # no probability left to other classes: no column for it
    return y, y_hat


def find_error_slices(embeddings, correct, k: int = 5, targets=None, predicted=None,
                      confidence=None, probabilities=None, components: int = COMPONENTS,
                      dimensions: Optional[int] = PCA_DIMENSIONS,
                      y_weight: float = Y_WEIGHT, y_hat_weight: float = Y_HAT_WEIGHT,
                      across_classes: bool = True,
                      fit_share: Optional[float] = FIT_SHARE, min_size: int = MIN_SIZE,
                      max_iter: int = MAX_ITER, join: bool = True,
                      seed: int = 0) -> ErrorSlices:
    """The ``k`` slices of an embedding space where a model errs most above
    its average, by Domino's error-aware mixture.

    Args:
        embeddings: ``(n, d)`` one vector per sample
        correct: ``(n,)`` whether the model is right on each sample
        k (5): the most slices to return
        targets, predicted, confidence, probabilities (None): the true class,
            the predicted class and its probability, or the prediction's
            probabilities over all classes (:func:`categorical_terms`);
            without them the categorical terms model the correctness only
        components (25): mixture components (at most ``fitted // min_size``)
        dimensions (128): PCA dimensions (None: the embeddings as given);
            the mixture without class terms keeps at most half the fitted
            samples per component (880 fitted samples in 25 components: 17),
            reduced by PCA to that even when ``dimensions`` is None
        y_weight, y_hat_weight (10, 10): the weights of the true-class and
            prediction terms (0 and 0: a Gaussian mixture of the embeddings)
        across_classes (True): with class terms, also fit the same mixture
            without them (the embeddings alone) and pool its slices with
            Domino's, best first, no sample in two (ours, not Domino's:
            Domino's class terms split a failure that spans the true classes,
            blurred copies of many classes, into one small component per
            confusion cell; ``perf/slices.py`` measures both)
        fit_share (0.5): the share of the samples the mixture is fitted on,
            drawn with ``seed``; the slices' numbers come from the others.
            None: fit on all samples and measure on the same
        min_size (5): the fewest fitted samples a slice may hold
        max_iter (100): EM iterations at most
        join (True): join components that are one failure
            (:func:`join_coherent`; False: each component is a slice, as
            Domino's)
        seed (0): the split, the PCA and the initialisation's noise

    Returns:
        an :class:`ErrorSlices`; only slices whose error rate on the fitted
        samples exceeds the overall one, at most ``k``, best first

    Raises:
        ImageNetXError: for embeddings of the wrong shape, NaN rows, ``k``
            or ``fit_share`` out of range
    """
    x, c = check_embeddings(embeddings, correct, k)
    n = len(x)
    if fit_share is not None and not 0 < fit_share < 1:
        raise ImageNetXError(
            f"`fit_share={fit_share}` must be between 0 and 1 (exclusive): the share of "
            "the samples the slices are fitted on, or None to fit on all")
    fitted = np.ones(n, dtype=bool)
    if fit_share is not None and n > 1:
        order = np.random.default_rng(seed).permutation(n)
        fitted[:] = False
        fitted[order[:max(1, min(n - 1, int(round(n * fit_share))))]] = True
    evaluated = ~fitted if fit_share is not None and n > 1 else fitted
    y, y_hat = categorical_terms(c, targets, predicted, confidence, probabilities)
    z = _reduce(x, fitted, dimensions, seed)
    m = int(max(1, min(components, fitted.sum() // max(1, min_size))))
    classes = targets is not None and predicted is not None
    cells = np.asarray(targets, np.int64) * (int(np.max(predicted)) + 1) + \
        np.asarray(predicted, np.int64) if classes and join else None
    fits = [_Fit(z, y, y_hat, m, y_weight, y_hat_weight, fitted, max_iter, seed)]
    if across_classes and classes and (y_weight or y_hat_weight):
        # without the categorical terms the Gaussians alone place the samples:
        # each estimates a mean and a variance per dimension, so keep at most
        # as many of those as a component's share of the fitted samples
        narrow = int(max(1, fitted.sum() // (2 * m)))
        z_across = z if narrow >= z.shape[1] else _reduce(x, fitted, narrow, seed)
        fits.append(_Fit(z_across, y, y_hat, m, 0.0, 0.0, fitted, max_iter, seed,
                         across=True))
    wrong = ~c
    average = wrong[fitted].mean()
    candidates = [(f, group) for f in fits
                  for group in f.worse(wrong, average, min_size, cells)]
    error = float(wrong[evaluated].mean())
    taken = np.zeros(n, dtype=bool)
    slices, bounds = [], []
    while candidates and len(slices) < k:
        # greedy, best first: a sample taken by one slice is in no other, and a
        # candidate left with under half its fitted members, or no longer worse
        # than average, is dropped
        best = None
        for f, group in list(candidates):
            rows = f.rows(group)
            free = rows[~taken[rows]]
            size = int(fitted[free].sum())
            bad = int(wrong[free][fitted[free]].sum())
            if size < max(min_size, fitted[rows].sum() / 2) or bad / max(size, 1) <= average:
                candidates.remove((f, group))
                continue
            # ranked by the error rate's Wilson lower bound: a pure slice of 40
            # before a pure one of 10
            score = (1 - wilson_interval(size - bad, size)[1], bad / size)
            if best is None or score > best[0]:
                best = (score, f, group, free, size, bad)
        if best is None:
            break
        (bound, rate), f, group, members, size, bad = best
        candidates.remove((f, group))
        bounds.append((-bound, -rate))
        taken[members] = True
        held = members[evaluated[members]]
        right = int(c[held].sum())
        acc = right / len(held) if len(held) else math.nan
        weight = f.resp[held][:, group].sum(axis=1)
        slices.append(ErrorSlice(
            rank=len(slices) + 1, components=list(group), members=members, held_out=held,
            typical=held[np.argsort(-weight, kind="stable")[:TYPICAL]], size=len(held),
            correct=right, accuracy=acc,
            error_ratio=(1 - acc) / error if error > 0 and len(held) else math.nan,
            interval=tuple(wilson_interval(right, len(held))) if len(held)
            else (math.nan, math.nan),
            fit_size=size, fit_accuracy=1 - rate, centroid=x[members].mean(axis=0),
            across_classes=f.across))
    # taking an earlier slice's right answers out of a later one can raise its
    # bound: ranked by the slices' own bounds
    slices = [sl for _, sl in sorted(zip(bounds, slices), key=lambda t: t[0])]
    for rank, sl in enumerate(slices, 1):
        sl.rank = rank
    split = {"seed": seed, "fit_share": fit_share, "fit": int(fitted.sum()),
             "held_out": int(evaluated.sum()) if fit_share is not None else 0}
    return ErrorSlices(slices, n, float(c[evaluated].mean()), m, z.shape[1], y_weight,
                       y_hat_weight, fits[0].mixture.n_iter, split, fitted,
                       fits[0].assignment, fits[0].resp, across_classes=len(fits) > 1,
                       across_dimensions=fits[-1].z.shape[1] if len(fits) > 1 else None)


class _Fit:
    """One mixture fitted on the fitted rows, and every row's membership."""

    def __init__(self, z, y, y_hat, m, y_weight, y_hat_weight, fitted, max_iter, seed,
                 across: bool = False):
        self.mixture = DominoMixture(m, y_weight, y_hat_weight, max_iter=max_iter, seed=seed)
        self.mixture.fit(z[fitted], y[fitted], y_hat[fitted])
        self.resp = self.mixture.predict_proba(z, y, y_hat)
        self.assignment = self.resp.argmax(axis=1)
        self.z, self.fitted, self.m, self.across = z, fitted, m, across

    def rows(self, group: list) -> np.ndarray:
        return np.flatnonzero(np.isin(self.assignment, group))

    def worse(self, wrong: np.ndarray, average: float, min_size: int, cells) -> list:
        """The groups of components whose error rate on the fitted rows is
        above ``average`` (joined by :func:`join_coherent` when ``cells`` are
        given)."""
        fitted, assignment, m = self.fitted, self.assignment, self.m
        sizes = np.bincount(assignment[fitted], minlength=m)
        rates = np.bincount(assignment[fitted], weights=wrong[fitted], minlength=m) / \
            np.maximum(sizes, 1)
        groups = [[j] for j in range(m) if sizes[j] >= min_size and rates[j] > average]
        if cells is not None and len(groups) > 1:
            groups = join_coherent(groups, self.z, cells, assignment, fitted)
        return groups


def spread(z: np.ndarray) -> float:
    """A slice's spread: the mean squared distance of its embeddings to
    their centroid (the smaller, the more coherent)."""
    return float(((z - z.mean(axis=0)) ** 2).sum(axis=1).mean()) if len(z) else 0.0


def join_coherent(groups: list, z: np.ndarray, cells: np.ndarray, assignment: np.ndarray,
                  fitted: np.ndarray) -> list:
    """Slices joined while the joined slice is as coherent as its parts.

    Two slices are one failure, and are joined, when on the fitted samples
    (1) their most common confusion cell (true class, predicted class) is
    the same and (2) the joined slice's :func:`spread` is at most
    :data:`SPREAD` times the larger of its parts' (two halves of one cluster
    join; two clusters apart by more than about half their radius do not).
    Domino's confusion initialisation starts several components on one cell
    when there are more components than cells, and the initial noise then
    splits one failure between them; nothing else is joined. The pair whose
    join spreads least goes first.
    """
    def rows(group):
        return np.flatnonzero(fitted & np.isin(assignment, group))

    def cell(group):
        values, counts = np.unique(cells[rows(group)], return_counts=True)
        return values[counts.argmax()]

    groups = [list(g) for g in groups]
    while len(groups) > 1:
        best = None
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                if cell(groups[i]) != cell(groups[j]):
                    continue
                parts = max(spread(z[rows(groups[i])]), spread(z[rows(groups[j])]))
                ratio = spread(z[rows(groups[i] + groups[j])]) / max(parts, 1e-12)
                if ratio <= SPREAD and (best is None or ratio < best[0]):
                    best = (ratio, i, j)
        if best is None:
            break
        _, i, j = best
        groups[i] += groups.pop(j)
    return groups


def _reduce(x: np.ndarray, fitted: np.ndarray, dimensions: Optional[int],
            seed: int) -> np.ndarray:
    """The embeddings projected on the top principal components of the
    fitted rows (Domino's PCA step), or centred when narrow already."""
    from sklearn.decomposition import PCA  # lazy: start-up (the parser imports metrics)

    if dimensions is None or x.shape[1] <= dimensions or fitted.sum() <= dimensions:
        return (x - x[fitted].mean(axis=0)).astype(np.float64)
    pca = PCA(n_components=dimensions, svd_solver="auto", random_state=seed).fit(x[fitted])
    return pca.transform(x).astype(np.float64)


class DominoMixture:
    """Domino's ``DominoMixture`` with diagonal covariances, in numpy.

    The E-step adds to each component's Gaussian log-density and log weight
    ``y_weight * log(y . y_probs)`` and ``y_hat_weight * log(y_hat .
    y_hat_probs)``; the M-step is scikit-learn's for the Gaussian part and
    the responsibility-weighted means of ``y`` and ``y_hat`` for the
    categoricals. ``y`` and ``y_hat`` may be dense or scipy-sparse.

    Args:
        components: mixture components
        y_weight, y_hat_weight: the categorical terms' weights
        max_iter (100), tol (1e-3), reg_covar (1e-6): as scikit-learn's
        confusion_noise (1e-3): the initialisation's noise
        seed (0): seeds ``np.random.RandomState`` for that noise, as Domino's
            ``random_state``
    """

    def __init__(self, components: int, y_weight: float = Y_WEIGHT,
                 y_hat_weight: float = Y_HAT_WEIGHT, max_iter: int = MAX_ITER,
                 tol: float = TOL, reg_covar: float = REG_COVAR,
                 confusion_noise: float = CONFUSION_NOISE, seed: int = 0):
        self.components = components
        self.y_weight, self.y_hat_weight = y_weight, y_hat_weight
        self.max_iter, self.tol, self.reg_covar = max_iter, tol, reg_covar
        self.confusion_noise, self.seed = confusion_noise, seed
        self.n_iter = 0

    def initial_responsibilities(self, y, y_hat) -> np.ndarray:
        """Domino's "confusion" initialisation: component ``j`` starts on
        cell ``j`` of the confusion matrix (true class x predicted class,
        row by row, repeated while components remain), plus uniform noise.
        With more cells than components (Domino refuses these) the
        components start on the most populated cells."""
        n = y.shape[0]
        cy, ch = y.shape[1], y_hat.shape[1]
        cells = cy * ch
        if self.components >= cells:
            chosen = np.resize(np.arange(cells), self.components)
        else:
            mass = _dense(_mul_t(y, y_hat)).ravel()  # (cy * ch,) the soft confusion matrix
            chosen = np.sort(np.argsort(-mass, kind="stable")[:self.components])
        a, b = np.divmod(chosen, ch)
        resp = _column(y, a) * _column(y_hat, b)
        total = resp.sum(axis=1, keepdims=True)
        resp = np.divide(resp, total, out=np.zeros_like(resp), where=total > 0)
        resp += np.random.RandomState(self.seed).rand(n, self.components) * self.confusion_noise
        return resp / resp.sum(axis=1, keepdims=True)

    def fit(self, z: np.ndarray, y, y_hat, resp: Optional[np.ndarray] = None):
        """EM from ``resp`` (default: :meth:`initial_responsibilities`)
        until the mean log-likelihood changes by less than ``tol``."""
        if resp is None:
            resp = self.initial_responsibilities(y, y_hat)
        self._m_step(z, y, y_hat, resp)
        before = -np.inf
        for self.n_iter in range(1, self.max_iter + 1):
            norm, log_resp = self._e_step(z, y, y_hat)
            self._m_step(z, y, y_hat, np.exp(log_resp))
            bound = norm.mean()
            if abs(bound - before) < self.tol:
                break
            before = bound
        return self

    def predict_proba(self, z: np.ndarray, y=None, y_hat=None) -> np.ndarray:
        """``(n, components)`` each row's responsibilities."""
        return np.exp(self._e_step(z, y, y_hat)[1])

    def _m_step(self, z, y, y_hat, resp):
        nk = resp.sum(axis=0) + 10 * np.finfo(resp.dtype).eps
        self.weights = nk / len(z)
        self.means = resp.T @ z / nk[:, None]
        avg_x2 = resp.T @ (z * z) / nk[:, None]
        avg_x_means = self.means * (resp.T @ z) / nk[:, None]
        self.covariances = avg_x2 - 2 * avg_x_means + self.means ** 2 + self.reg_covar
        self.y_probs = _dense(_mul_t(resp, y)) / nk[:, None]
        self.y_hat_probs = _dense(_mul_t(resp, y_hat)) / nk[:, None]

    def _e_step(self, z, y=None, y_hat=None):
        """``(log p(row) (n,), log responsibilities (n, m))``."""
        precision = 1.0 / self.covariances
        log_det = 0.5 * np.log(precision).sum(axis=1)
        log_prob = -0.5 * (z.shape[1] * np.log(2 * np.pi) + (
            (self.means ** 2 * precision).sum(axis=1) - 2 * z @ (self.means * precision).T
            + (z * z) @ precision.T)) + log_det + np.log(self.weights)
        eps = np.finfo(np.float64).eps
        if y is not None and self.y_weight:
            log_prob += self.y_weight * np.log(_dense(y @ self.y_probs.T) + eps)
        if y_hat is not None and self.y_hat_weight:
            log_prob += self.y_hat_weight * np.log(_dense(y_hat @ self.y_hat_probs.T) + eps)
        top = log_prob.max(axis=1, keepdims=True)
        norm = top[:, 0] + np.log(np.exp(log_prob - top).sum(axis=1))
        return norm, log_prob - norm[:, None]


def _dense(a) -> np.ndarray:
    return np.asarray(a.toarray() if hasattr(a, "toarray") else a)


def _mul_t(a, b):
    """``a.T @ b`` for dense or sparse ``b`` (sparse on the left)."""
    return (b.T @ a).T if hasattr(b, "toarray") else a.T @ b


def _column(a, index: np.ndarray) -> np.ndarray:
    return _dense(a[:, index]).astype(np.float64)


def class_reference(targets, members) -> np.ndarray:
    """The rows Domino's ``describe`` contrasts a slice with: every row of
    the slice's most common true class (the smallest class among ties, as
    ``scipy.stats.mode``), the slice's own members included.

    Args:
        targets: ``(n,)`` each row's true class index
        members: the slice's rows
    """
    targets = np.asarray(targets)
    values, counts = np.unique(targets[members], return_counts=True)
    return np.flatnonzero(targets == values[np.argmax(counts)])


def rank_texts(embeddings, members, text_vectors, top: int = 3,
               reference=None) -> list:
    """The texts nearest a slice in a shared image-text space, as Domino's
    ``describe`` ranks them: by the dot product of each (unit) text vector
    with the slice's prototype minus a reference prototype (means of unit
    image embeddings), so a text scores for what sets the slice apart from
    the reference, not for what both share.

    Args:
        embeddings: ``(n, d)`` image embeddings in the image-text space
        members: the slice's rows
        text_vectors: ``(t, d)`` the texts' embeddings in the same space
        top (3): how many texts to return
        reference (None): the rows of the reference: Domino's are those of
            the slice's own class (:func:`class_reference`), so a slice of
            one class is not named by its class; None: all rows (Domino's
            ``MeanDescriber``)

    Returns:
        ``[(text index, score, similarity)]`` best first; ``similarity`` is
        the cosine between the text and the slice's prototype

    Raises:
        ImageNetXError: when the two spaces differ in dimension
    """
    x = np.asarray(embeddings, dtype=np.float64)
    t = np.asarray(text_vectors, dtype=np.float64)
    if t.ndim != 2 or t.shape[1] != x.shape[1]:
        raise ImageNetXError(
            f"`text_vectors` have shape {t.shape} and the image embeddings "
            f"{x.shape[1]} dimensions: embed the images and the texts with the same "
            "image-text model")
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    t = t / np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-12)
    proto = unit[members].mean(axis=0)
    ref = unit.mean(axis=0) if reference is None else unit[reference].mean(axis=0)
    scores = t @ (proto - ref)
    similarity = t @ (proto / max(np.linalg.norm(proto), 1e-12))
    order = np.argsort(-scores, kind="stable")[:top]
    return [(int(i), float(scores[i]), float(similarity[i])) for i in order]
