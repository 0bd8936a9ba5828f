"""Error-aware slices in an embedding space: groups of similar images on
which a model errs far above its average, whether or not any annotation
names them ("drawings of dogs", "close-ups of fur").

The method is Domino's (Eyuboglu et al., ICLR 2022): a mixture model over
the images' embeddings *and* the model's errors, fitted by expectation-
maximisation, whose components with the highest error rates are the
slices. Each component is a diagonal Gaussian over the embeddings (reduced
by PCA, 128 dimensions as in Domino) times a Bernoulli over the error,
whose log-likelihood is weighted by ``error_weight`` (Domino's
``y_hat_log_likelihood_weight``): the weight pulls mistakes and correct
predictions into separate components, so a component is homogeneous in
error as well as in appearance.

One step is added to Domino's: the mixture is fitted with more components
than Domino's (64 against 25), and components worse than average that are
near one another and on which the model fails alike are joined into one
slice (complete linkage). A failure seldom lies in one tight cluster: the 80
cue-conflict images of one texture class are three clusters in an ImageNet
CNN's space, one per texture photo, and Domino's top slice held one or two
of them (recall 0.50 averaged over the 16 classes, ``perf/error_slices.py
--cue-conflict``); joined, 0.90.

It is written here in numpy rather than using ``domino`` 0.1.5 because
that package pins scikit-learn 0.24.2 (no wheel for current Pythons) and
imports a removed scikit-learn internal (``sklearn.mixture._base._check_X``);
its model for a binary target reduces to the one here, with the model's
correctness as the target (``perf/error_slices.py`` compares them when
``domino`` is importable). The E-step is three matrix products per
iteration, so 50,000 x 512 embeddings take seconds on a CPU.
"""

import math
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.stats import to_json, wilson_interval

#: mixture components: more than the clusters a failure spans, so that each
#: component is one of them (Domino's 25 left two planted clusters in one
#: component with correct images), joined afterwards
COMPONENTS = 64
#: Domino's defaults: PCA dimensions, EM iterations
PCA_DIMENSIONS = 128
MAX_ITER = 100
#: the weight of the error term in each sample's log-likelihood
ERROR_WEIGHT = 1.0
#: the components of one slice are, pair by pair, more similar (the cosine
#: of their centroids) than this share of all pairs of components
NEAR = 0.6
#: a slice holds at least this many samples
MIN_SIZE = 10
#: the images kept per slice as its most typical (highest responsibility)
TYPICAL = 8

_TOL = 1e-4
_REG = 1e-6


@dataclass
class ErrorSlice:
    """One slice: its members and the model's statistics on them.

    Attributes:
        rank: 1 for the slice with the highest error rate
        components: the mixture components it joins
        members: ``(size,)`` row indices into the embeddings
        typical: the rows most typical of the slice (highest responsibility
            first)
        size, correct: samples and correct predictions in the slice
        accuracy: ``correct / size``
        error_ratio: the slice's error rate over the overall error rate
        interval: the Wilson interval ``(low, high)`` of the accuracy
        centroid: ``(d,)`` mean embedding of the members (the space the
            embeddings were given in)
    """

    rank: int
    components: list
    members: np.ndarray
    typical: np.ndarray
    size: int
    correct: int
    accuracy: float
    error_ratio: float
    interval: tuple
    centroid: np.ndarray = field(repr=False)

    def to_dict(self) -> dict:
        """JSON-ready statistics (without the member rows)."""
        return {"rank": self.rank, "size": self.size, "correct": self.correct,
                "accuracy": to_json(self.accuracy), "error_ratio": to_json(self.error_ratio),
                "interval": [to_json(v) for v in self.interval]}


@dataclass
class ErrorSlices:
    """The slices of one fit, best first, and what the fit used."""

    slices: List[ErrorSlice]
    n: int
    accuracy: float
    components: int
    dimensions: int
    error_weight: float
    iterations: int
    #: ``(n,)`` each row's component (hard assignment)
    assignment: np.ndarray = field(repr=False)


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


def find_error_slices(embeddings, correct, k: int = 5, components: int = COMPONENTS,
                      dimensions: Optional[int] = PCA_DIMENSIONS,
                      error_weight: float = ERROR_WEIGHT, min_size: int = MIN_SIZE,
                      max_iter: int = MAX_ITER, join: bool = True,
                      seed: int = 0) -> ErrorSlices:
    """The ``k`` slices of an embedding space where a model errs most above
    its average.

    Args:
        embeddings: ``(n, d)`` one vector per sample
        correct: ``(n,)`` whether the model is right on each sample
        k (5): the most slices to return
        components (64): mixture components (at most ``n // min_size``)
        dimensions (128): PCA dimensions the mixture is fitted in (None:
            the embeddings as given)
        error_weight (1): the weight of the error term (Domino's default)
        min_size (10): the fewest samples a slice may hold
        max_iter (100): EM iterations at most
        join (True): join neighbouring components worse than average on
            which the model fails alike into one slice (False: each
            component is a slice, as Domino's)
        seed (0): the seed of the k-means initialisation and the PCA

    Returns:
        an :class:`ErrorSlices`; only slices whose error rate exceeds the
        overall one, at most ``k``, best (highest error rate) first

    Raises:
        ImageNetXError: for embeddings of the wrong shape, NaN rows, or
            ``k`` out of range
    """
    x, c = check_embeddings(embeddings, correct, k)
    n = len(x)
    wrong = (~c).astype(np.float64)
    z = _reduce(x, dimensions, seed)
    m = int(max(1, min(components, n // max(1, min_size))))
    resp, iterations = _fit(z, wrong, m, error_weight, max_iter, seed)
    assignment = resp.argmax(axis=1)
    accuracy = float(c.mean())
    error = 1 - accuracy
    sizes = np.bincount(assignment, minlength=m)
    wrongs = np.bincount(assignment, weights=wrong, minlength=m)
    worse = [j for j in range(m) if sizes[j] and wrongs[j] / sizes[j] > error]
    groups = [[j] for j in worse]
    if join and len(worse) > 1:
        groups = _join_alike(worse, _centroid_directions(x, assignment, m), sizes, wrongs)
    found = []
    for group in groups:
        rows = np.flatnonzero(np.isin(assignment, group))
        if len(rows) < min_size:
            continue
        right = int(c[rows].sum())
        found.append((right / len(rows), -len(rows), group, rows, right))
    found.sort(key=lambda f: f[:2])  # highest error rate, then largest, first
    slices = []
    for acc, _, group, rows, right in found[:k]:
        weight = resp[np.ix_(rows, group)].sum(axis=1)
        slices.append(ErrorSlice(
            rank=len(slices) + 1, components=group, members=rows,
            typical=rows[np.argsort(-weight, kind="stable")[:TYPICAL]], size=len(rows),
            correct=right, accuracy=acc,
            error_ratio=(1 - acc) / error if error > 0 else math.nan,
            interval=tuple(wilson_interval(right, len(rows))),
            centroid=x[rows].mean(axis=0)))
    return ErrorSlices(slices, n, accuracy, m, z.shape[1], error_weight, iterations,
                       assignment)


def _centroid_directions(x: np.ndarray, assignment: np.ndarray, m: int) -> np.ndarray:
    """``(m, d)`` each component's mean unit embedding (zero for an empty
    component)."""
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    order = np.argsort(assignment, kind="stable")
    starts = np.searchsorted(assignment[order], np.arange(m))
    sums = np.add.reduceat(unit[order], np.minimum(starts, len(x) - 1), axis=0)
    sizes = np.bincount(assignment, minlength=m)
    sums[sizes == 0] = 0
    return sums / np.maximum(sizes, 1)[:, None]


def _join_alike(components: list, directions: np.ndarray, sizes: np.ndarray,
                wrongs: np.ndarray) -> list:
    """The components grouped by complete linkage, most similar first: two
    groups are joined while every pair of their components is near (the
    cosine of their centroids above the :data:`NEAR` share of all pairs of
    components) and the model fails on the two alike (their accuracies'
    Wilson intervals overlap)."""
    unit = directions / np.maximum(np.linalg.norm(directions, axis=1, keepdims=True), 1e-12)
    present = np.flatnonzero(sizes > 0)
    cosine = unit @ unit.T
    pairs = cosine[np.ix_(present, present)][np.triu_indices(len(present), 1)]
    near = np.quantile(pairs, 1 - NEAR)
    groups = [[j] for j in components]
    counts = [(float(sizes[j]), float(wrongs[j])) for j in components]
    # the least similar pair of components between two groups (complete linkage)
    linkage = cosine[np.ix_(components, components)].copy()
    np.fill_diagonal(linkage, -np.inf)
    while len(groups) > 1:
        intervals = [wilson_interval(n - w, n) for n, w in counts]
        best = None
        for a, b in zip(*np.nonzero(np.triu(linkage >= near, 1))):
            (low_a, high_a), (low_b, high_b) = intervals[a], intervals[b]
            if high_a >= low_b and high_b >= low_a and (
                    best is None or linkage[a, b] > linkage[best]):
                best = (a, b)
        if best is None:
            break
        a, b = best
        groups[a] += groups.pop(b)
        (na, wa), (nb, wb) = counts[a], counts.pop(b)
        counts[a] = (na + nb, wa + wb)
        linkage[a] = linkage[:, a] = np.minimum(linkage[a], linkage[b])
        linkage[a, a] = -np.inf
        linkage = np.delete(np.delete(linkage, b, axis=0), b, axis=1)
    return groups


def _reduce(x: np.ndarray, dimensions: Optional[int], seed: int) -> np.ndarray:
    """The embeddings centred and, when wider than ``dimensions``, projected
    on their top principal components (scikit-learn's ``auto`` solver: the
    covariance's eigenvectors when samples far outnumber dimensions, 5x
    faster than a randomized SVD on 50,000 x 512)."""
    from sklearn.decomposition import PCA  # lazy: start-up (the parser imports metrics)

    if dimensions is None or x.shape[1] <= dimensions or len(x) <= dimensions:
        return (x - x.mean(axis=0)).astype(np.float64)
    pca = PCA(n_components=dimensions, svd_solver="auto", random_state=seed)
    return pca.fit_transform(x).astype(np.float64)


def _fit(z: np.ndarray, wrong: np.ndarray, m: int, weight: float, max_iter: int,
         seed: int):
    """EM for the mixture of diagonal Gaussians x Bernoulli errors;
    ``(responsibilities (n, m), iterations)``."""
    from sklearn.cluster import KMeans  # lazy: start-up (the parser imports metrics)

    n = len(z)
    labels = KMeans(n_clusters=m, n_init=1, max_iter=50, random_state=seed).fit(z).labels_
    resp = np.zeros((n, m))
    resp[np.arange(n), labels] = 1.0
    floor = _REG + 1e-3 * z.var(axis=0).mean()
    before = -np.inf
    iterations = 0
    for iterations in range(1, max_iter + 1):
        # M-step
        nk = resp.sum(axis=0) + 1e-10
        weights = nk / n
        means = resp.T @ z / nk[:, None]
        var = resp.T @ (z * z) / nk[:, None] - means ** 2
        var = np.maximum(var, 0) + floor
        p = np.clip(resp.T @ wrong / nk, 1e-6, 1 - 1e-6)
        # E-step: log N(z | mean, var) by three products
        precision = 1.0 / var
        log_gauss = -0.5 * (
            (z * z) @ precision.T - 2.0 * z @ (means * precision).T
            + ((means ** 2) * precision).sum(axis=1)
            + np.log(2 * np.pi * var).sum(axis=1))
        log_err = wrong[:, None] * np.log(p) + (1 - wrong[:, None]) * np.log1p(-p)
        log_prob = log_gauss + weight * log_err + np.log(weights)
        top = log_prob.max(axis=1, keepdims=True)
        norm = top[:, 0] + np.log(np.exp(log_prob - top).sum(axis=1))
        resp = np.exp(log_prob - norm[:, None])
        mean = norm.mean()
        if abs(mean - before) < _TOL * max(1.0, abs(mean)):
            break
        before = mean
    return resp, iterations


def rank_texts(embeddings, members, text_vectors, top: int = 3,
               reference=None) -> list:
    """The texts nearest a slice in a shared image-text space, as Domino's
    ``describe`` ranks them: by the dot product of each (unit) text vector
    with the slice's prototype minus a reference prototype (the mean of
    unit image embeddings), so a text scores for what sets the slice apart,
    not for what every image shares.

    Args:
        embeddings: ``(n, d)`` image embeddings in the image-text space
        members: the slice's rows
        text_vectors: ``(t, d)`` the texts' embeddings in the same space
        top (3): how many texts to return
        reference (None): the rows of the reference (default: all rows)

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
            f"{x.shape[1]} dimensions: describe with the image-text model that made "
            "the embeddings")
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    t = t / np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-12)
    proto = unit[members].mean(axis=0)
    ref = unit.mean(axis=0) if reference is None else unit[reference].mean(axis=0)
    scores = t @ (proto - ref)
    similarity = t @ (proto / max(np.linalg.norm(proto), 1e-12))
    order = np.argsort(-scores, kind="stable")[:top]
    return [(int(i), float(scores[i]), float(similarity[i])) for i in order]
