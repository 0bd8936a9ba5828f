"""Detectors that read a run's penultimate features and its head ``W, b``:
ReAct, ASH-S, ViM and KNN, each with the fit step that computes its
statistics on ID training images.

Each score is higher for more in-distribution images. Sources: OpenOOD
(Jingkang50/OpenOOD at 3c35632: ``openood/postprocessors/``,
``openood/networks/``) and the ViM authors' ``benchmark.py``
(haoqiwang/vim at dabf9e5).
"""

from dataclasses import dataclass
from typing import Optional

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.ood.base import Detector, FitStats, Outputs, as_matrix
from imagenetx.ood.logits import logsumexp

#: pairwise distances computed per block of at most this many entries
_KNN_BLOCK = 1 << 24


def as_features(features, name: str = "features") -> np.ndarray:
    """``features`` as a 2-D float64 ``(images, dimensions)`` array (:func:`as_matrix`)."""
    return as_matrix(features, name, "dimensions")


def head(features, weight, bias) -> np.ndarray:
    """``features @ W.T + b``: the logits of a linear head.

    Raises:
        ImageNetXError: when ``W`` is not ``(C, D)`` for ``(n, D)`` features
            or ``b`` not ``(C,)``
    """
    f = as_features(features)
    w = np.asarray(weight, dtype=np.float64)
    b = np.asarray(bias, dtype=np.float64)
    if w.ndim != 2 or w.shape[1] != f.shape[1] or b.shape != (w.shape[0],):
        raise ImageNetXError(
            f"The head's `weight` {w.shape} and `bias` {b.shape} do not fit features of "
            f"{f.shape[1]} dimensions: give W as (classes, {f.shape[1]}) and b as (classes,)")
    return f @ w.T + b


# --- ReAct -------------------------------------------------------------------


@dataclass(frozen=True)
class ReActStats(FitStats):
    """ReAct's clip: the ``percentile``-th percentile of all ID training
    activations."""

    threshold: float
    percentile: float


def fit_react(features, percentile: float = 90.0) -> ReActStats:
    """``c = np.percentile(features.ravel(), percentile)`` over ID features
    (Sun et al. 2021; OpenOOD react_postprocessor.py:39-40 over its ID
    validation split, the ViM authors' benchmark.py:208 over the training
    features): held-out ID images, never OOD or test ones."""
    f = as_features(features)
    return ReActStats(threshold=float(np.percentile(f.ravel(), percentile)),
                      percentile=float(percentile))


def react(features, weight, bias, stats: ReActStats) -> np.ndarray:
    """``logsumexp(W min(h, c) + b)``: energy of the logits of features
    clipped at ``c`` (OpenOOD react_net.py:15-20, react_postprocessor.py:44-47)."""
    return logsumexp(head(np.minimum(as_features(features), stats.threshold), weight, bias))


# --- ASH-S -------------------------------------------------------------------


def ash_s_features(features, percentile: float = 90.0) -> np.ndarray:
    """ASH-S: per image, keep the ``k = D - round(D * percentile / 100)``
    largest activations, zero the others, and scale what is kept by
    ``exp(s1 / s2)``, ``s1`` and ``s2`` the sums before and after pruning
    (Djurisic et al. 2023; OpenOOD networks/ash_net.py:62-82, ``ash_s``).
    An image whose kept activations sum to 0 keeps its scale at 1."""
    f = as_features(features)
    d = f.shape[1]
    k = d - int(np.round(d * percentile / 100.0))
    if k < 1:
        raise ImageNetXError(
            f"`percentile` {percentile} prunes all {d} activations: use less than 100")
    s1 = f.sum(axis=1)
    top = np.argpartition(f, d - k, axis=1)[:, d - k:]
    pruned = np.zeros_like(f)
    rows = np.arange(len(f))[:, None]
    pruned[rows, top] = f[rows, top]
    s2 = pruned.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(s2 != 0, np.exp(s1 / np.where(s2 != 0, s2, 1.0)), 1.0)
    return pruned * scale[:, None]


def ash_s(features, weight, bias, percentile: float = 90.0) -> np.ndarray:
    """Energy ``logsumexp`` of the logits of :func:`ash_s_features`
    (OpenOOD ash_postprocessor.py:20-22). OpenOOD's ``ASHNet`` itself
    applies ``ash_b`` (ash_net.py:19); this is the paper's ASH-S."""
    return logsumexp(head(ash_s_features(features, percentile), weight, bias))


# --- ViM ---------------------------------------------------------------------


@dataclass(frozen=True)
class ViMStats(FitStats):
    """ViM's principal space, fitted on ID training features.

    Attributes:
        origin: ``u = -pinv(W) b``, ``(D,)``
        residual: ``(D, D - dim)`` the eigenvectors of the centred features'
            second moment outside the ``dim`` largest
        alpha: ``mean max-logit / mean residual norm`` on the training images
        dim: the principal space's dimension
    """

    origin: np.ndarray
    residual: np.ndarray
    alpha: float
    dim: int


def vim_dim(n_dims: int) -> int:
    """The ViM authors' principal dimension for ``n_dims``-dimensional
    features: 1000 from 2048, 512 from 768, else half (benchmark.py:230-235)."""
    return 1000 if n_dims >= 2048 else 512 if n_dims >= 768 else n_dims // 2


def fit_vim(features, weight, bias, dim: Optional[int] = None) -> ViMStats:
    """ViM's statistics of ID training features (Wang et al. 2022; OpenOOD
    vim_postprocessor.py:41-64; benchmark.py:237-248):

    ``u = -pinv(W) b``; the eigenvectors of ``(F - u)^T (F - u) / n``
    (scikit-learn's ``EmpiricalCovariance(assume_centered=True)``) sorted by
    eigenvalue; the residual space spanned by all but the ``dim`` largest;
    ``alpha = mean_i max_c z_ic / mean_i ||(f_i - u) R||``.

    Raises:
        ImageNetXError: when ``dim`` leaves no residual space
    """
    f = as_features(features)
    logits = head(f, weight, bias)
    dim = vim_dim(f.shape[1]) if dim is None else int(dim)
    if not 0 < dim < f.shape[1]:
        raise ImageNetXError(
            f"`dim` {dim} leaves no residual space of {f.shape[1]}-dimensional features: "
            f"use 1 to {f.shape[1] - 1}")
    u = -np.linalg.pinv(np.asarray(weight, dtype=np.float64)) @ np.asarray(bias, np.float64)
    x = f - u
    values, vectors = np.linalg.eigh(x.T @ x / len(x))  # symmetric: eigh, real
    residual = np.ascontiguousarray(vectors[:, np.argsort(-values, kind="stable")[dim:]])
    alpha = logits.max(axis=1).mean() / np.linalg.norm(x @ residual, axis=1).mean()
    return ViMStats(origin=u, residual=residual, alpha=float(alpha), dim=dim)


def vim(features, weight, bias, stats: ViMStats) -> np.ndarray:
    """``-alpha ||(f - u) R|| + logsumexp(W f + b)``: energy less the scaled
    norm of the feature's residual (OpenOOD vim_postprocessor.py:69-77)."""
    f = as_features(features)
    virtual = stats.alpha * np.linalg.norm((f - stats.origin) @ stats.residual, axis=1)
    return -virtual + logsumexp(head(f, weight, bias))


# --- KNN ---------------------------------------------------------------------


@dataclass(frozen=True)
class KNNStats(FitStats):
    """KNN's bank: the ID training features, each scaled to unit length."""

    bank: np.ndarray


def _normalize(f: np.ndarray) -> np.ndarray:
    # OpenOOD knn_postprocessor.py:11 divides by the norm (and adds 1e-10 after);
    # a zero vector stays zero here
    norm = np.linalg.norm(f, axis=1, keepdims=True)
    return f / np.where(norm > 0, norm, 1.0)


def fit_knn(features) -> KNNStats:
    """The normalized ID training features ``z / ||z||`` (Sun et al. 2022;
    OpenOOD knn_postprocessor.py:36-41)."""
    return KNNStats(bank=_normalize(as_features(features)))


def knn(features, stats: KNNStats, k: int = 50) -> np.ndarray:
    """``-||z* - z_(k)||``: minus the Euclidean distance from the normalized
    feature to its ``k``-th nearest normalized ID training feature (Sun et
    al. 2022, eq. 2). OpenOOD (knn_postprocessor.py:50-54) returns minus
    faiss's squared distance: the same order, so the same metrics.

    Raises:
        ImageNetXError: when ``k`` exceeds the bank
    """
    bank = stats.bank
    if not 0 < k <= len(bank):
        raise ImageNetXError(f"`k` is {k}: the bank holds {len(bank)} ID training features")
    z = _normalize(as_features(features))
    out = np.empty(len(z))
    step = max(1, _KNN_BLOCK // len(bank))
    for start in range(0, len(z), step):
        block = z[start:start + step]
        # unit vectors: ||a - b||^2 = 2 - 2 a.b (rounding can go just below 0)
        d2 = np.maximum(
            (block * block).sum(1)[:, None] + (bank * bank).sum(1)[None] - 2 * block @ bank.T,
            0.0)
        out[start:start + step] = np.partition(d2, k - 1, axis=1)[:, k - 1]
    return -np.sqrt(out)


# --- the detectors -------------------------------------------------------------


class _FeatureDetector(Detector):
    needs = ("features", "weight", "bias")


class ReAct(_FeatureDetector):
    """ReAct: energy of features clipped at the ``percentile``-th (90)
    percentile of ID training activations."""

    name = "react"
    fit_on = "id_train"

    def __init__(self, percentile: float = 90.0):
        self.percentile = float(percentile)

    def fit(self, outputs: Outputs) -> ReActStats:
        outputs.require(("features",), self.name)
        return fit_react(outputs.features, self.percentile)

    def score(self, outputs: Outputs, stats: Optional[FitStats] = None) -> np.ndarray:
        outputs.require(self.needs, self.name)
        return react(outputs.features, outputs.weight, outputs.bias,
                     self._stats(stats, ReActStats))


class ASHS(_FeatureDetector):
    """ASH-S: energy of the features pruned to their top ``100 - percentile``
    % (``percentile`` 90) and sharpened; nothing to fit."""

    name = "ash_s"

    def __init__(self, percentile: float = 90.0):
        self.percentile = float(percentile)

    def score(self, outputs: Outputs, stats: Optional[FitStats] = None) -> np.ndarray:
        outputs.require(self.needs, self.name)
        return ash_s(outputs.features, outputs.weight, outputs.bias, self.percentile)


class ViM(_FeatureDetector):
    """ViM with a ``dim``-dimensional principal space (None: the authors'
    rule, :func:`vim_dim`)."""

    name = "vim"
    fit_on = "id_train"

    def __init__(self, dim: Optional[int] = None):
        self.dim = dim

    def fit(self, outputs: Outputs) -> ViMStats:
        outputs.require(self.needs, self.name)
        return fit_vim(outputs.features, outputs.weight, outputs.bias, self.dim)

    def score(self, outputs: Outputs, stats: Optional[FitStats] = None) -> np.ndarray:
        outputs.require(self.needs, self.name)
        return vim(outputs.features, outputs.weight, outputs.bias, self._stats(stats, ViMStats))


class KNN(Detector):
    """KNN: minus the distance to the ``k``-th (50, OpenOOD's
    configs/postprocessors/knn.yml) nearest normalized ID training feature."""

    name = "knn"
    needs = ("features",)
    fit_on = "id_train"

    def __init__(self, k: int = 50):
        self.k = int(k)

    def fit(self, outputs: Outputs) -> KNNStats:
        outputs.require(self.needs, self.name)
        return fit_knn(outputs.features)

    def score(self, outputs: Outputs, stats: Optional[FitStats] = None) -> np.ndarray:
        outputs.require(self.needs, self.name)
        return knn(outputs.features, self._stats(stats, KNNStats), self.k)
