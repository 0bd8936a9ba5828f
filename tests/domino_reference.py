"""Domino's mixture model as its authors wrote it, for the tests to compare
``imagenetx.metrics.error_slices.DominoMixture`` against.

Transcribed from ``DominoMixture`` and ``_estimate_parameters`` in
https://github.com/HazyResearch/domino/blob/ddc783bdbad4ce7f797e6c2b5000f1853c38f57e/domino/_slice/mixture.py
(the E-step and M-step are the same in the released 0.1.5,
``domino/_slice/domino.py`` at tag v0.1.5), on scikit-learn's own
``GaussianMixture`` internals as Domino uses them. ``domino`` itself does not
install (it pins scikit-learn 0.24.2); the only changes are that: the
removed ``sklearn.mixture._base._check_X`` is replaced by a float64 array,
``_check_n_features`` by setting ``n_features_in_``, and the progress bar
and debugger calls are dropped. Only ``covariance_type="diag"`` (Domino's
default) and ``init_params="confusion"`` are kept.
"""

import numpy as np
from scipy.special import logsumexp
from sklearn.mixture import GaussianMixture
from sklearn.mixture._gaussian_mixture import (
    _compute_precision_cholesky,
    _estimate_gaussian_covariances_diag,
)
from sklearn.utils import check_random_state


class DominoMixture(GaussianMixture):
    def __init__(self, *args, y_log_likelihood_weight: float = 1,
                 y_hat_log_likelihood_weight: float = 1, confusion_noise: float = 1e-3,
                 **kwargs):
        self.y_log_likelihood_weight = y_log_likelihood_weight
        self.y_hat_log_likelihood_weight = y_hat_log_likelihood_weight
        self.confusion_noise = confusion_noise
        super().__init__(*args, **kwargs)

    def _initialize_parameters(self, X, y, y_hat, random_state):
        n_samples, _ = X.shape
        assert self.init_params == "confusion"
        num_classes = y.shape[-1]
        if self.n_components < num_classes**2:
            raise ValueError(
                "Can't use 'init_params=\"confusion\"' when "
                "`n_components` < `num_classes **2`"
            )
        resp = np.matmul(y[:, :, np.newaxis], y_hat[:, np.newaxis, :]).reshape(len(y), -1)
        resp = np.concatenate(
            [resp]
            * (
                int(self.n_components / (num_classes**2))
                + (self.n_components % (num_classes**2) > 0)
            ),
            axis=1,
        )[:, : self.n_components]
        resp /= resp.sum(axis=1)[:, np.newaxis]
        resp += random_state.rand(n_samples, self.n_components) * self.confusion_noise
        resp /= resp.sum(axis=1)[:, np.newaxis]
        self._initialize(X, y, y_hat, resp)

    def _initialize(self, X, y, y_hat, resp):
        n_samples, _ = X.shape
        weights, means, covariances, y_probs, y_hat_probs = _estimate_parameters(
            X, y, y_hat, resp, self.reg_covar, self.covariance_type
        )
        weights /= n_samples
        self.weights_ = weights
        self.means_ = means
        self.y_probs, self.y_hat_probs = y_probs, y_hat_probs
        self.covariances_ = covariances
        self.precisions_cholesky_ = _compute_precision_cholesky(
            covariances, self.covariance_type
        )

    def fit_predict(self, X, y, y_hat):
        X = np.asarray(X, dtype=np.float64)  # was _check_X(X, self.n_components, ...)
        self.n_features_in_ = X.shape[1]
        max_lower_bound = -np.inf
        self.converged_ = False
        random_state = check_random_state(self.random_state)
        self._initialize_parameters(X, y, y_hat, random_state)
        lower_bound = -np.inf
        for n_iter in range(1, self.max_iter + 1):
            prev_lower_bound = lower_bound
            log_prob_norm, log_resp = self._e_step(X, y, y_hat)
            self._m_step(X, y, y_hat, log_resp)
            lower_bound = log_prob_norm  # _compute_lower_bound(log_resp, log_prob_norm)
            change = lower_bound - prev_lower_bound
            if abs(change) < self.tol:
                self.converged_ = True
                break
        if lower_bound > max_lower_bound:
            max_lower_bound = lower_bound
        self.n_iter_ = n_iter
        self.lower_bound_ = max_lower_bound
        _, log_resp = self._e_step(X, y, y_hat)
        return log_resp.argmax(axis=1)

    def predict_proba(self, X, y=None, y_hat=None):
        X = np.asarray(X, dtype=np.float64)
        _, log_resp = self._estimate_log_prob_resp(X, y, y_hat)
        return np.exp(log_resp)

    def _m_step(self, X, y, y_hat, log_resp):
        resp = np.exp(log_resp)
        n_samples, _ = X.shape
        (self.weights_, self.means_, self.covariances_, self.y_probs,
         self.y_hat_probs) = _estimate_parameters(
            X, y, y_hat, resp, self.reg_covar, self.covariance_type)
        self.weights_ /= n_samples
        self.precisions_cholesky_ = _compute_precision_cholesky(
            self.covariances_, self.covariance_type)

    def _e_step(self, X, y, y_hat):
        log_prob_norm, log_resp = self._estimate_log_prob_resp(X, y, y_hat)
        return np.mean(log_prob_norm), log_resp

    def _estimate_log_prob_resp(self, X, y=None, y_hat=None):
        weighted_log_prob = self._estimate_weighted_log_prob(X, y, y_hat)
        log_prob_norm = logsumexp(weighted_log_prob, axis=1)
        with np.errstate(under="ignore"):
            log_resp = weighted_log_prob - log_prob_norm[:, np.newaxis]
        return log_prob_norm, log_resp

    def _estimate_weighted_log_prob(self, X, y=None, y_hat=None):
        log_prob = self._estimate_log_prob(X) + self._estimate_log_weights()
        if y is not None:
            log_prob += self._estimate_y_log_prob(y) * self.y_log_likelihood_weight
        if y_hat is not None:
            log_prob += self._estimate_y_hat_log_prob(y_hat) * self.y_hat_log_likelihood_weight
        return log_prob

    def _estimate_y_log_prob(self, y):
        return np.log(np.dot(y, self.y_probs.T) + np.finfo(self.y_probs.dtype).eps)

    def _estimate_y_hat_log_prob(self, y_hat):
        return np.log(np.dot(y_hat, self.y_hat_probs.T) + np.finfo(self.y_hat_probs.dtype).eps)


def _estimate_parameters(X, y, y_hat, resp, reg_covar, covariance_type):
    nk = resp.sum(axis=0) + 10 * np.finfo(resp.dtype).eps  # (n_components, )
    means = np.dot(resp.T, X) / nk[:, np.newaxis]
    covariances = {"diag": _estimate_gaussian_covariances_diag}[covariance_type](
        resp, X, nk, means, reg_covar)
    y_probs = np.dot(resp.T, y) / nk[:, np.newaxis]  # (n_components, n_classes)
    y_hat_probs = np.dot(resp.T, y_hat) / nk[:, np.newaxis]  # (n_components, n_classes)
    return nk, means, covariances, y_probs, y_hat_probs


def describe(embeddings, targets, slices, text_embeddings, slice_idx: int = 0,
             slice_threshold: float = 0.5):
    """Domino's ``describe``: the score of each text for one slice.

    Transcribed from ``describe`` in
    https://github.com/HazyResearch/domino/blob/34a3179328104e1bce276522cff8c150fb4653e3/domino/_describe/__init__.py
    (its last six lines); the only changes: arrays instead of a Meerkat
    DataPanel (``unpack_args`` and ``.data`` dropped), ``keepdims=True`` for
    scipy >= 1.11's ``mode`` to return the array Domino indexes, and the
    scores returned as an array instead of a DataPanel with the phrases.
    """
    from scipy.stats import mode

    slice_mask = slices[:, slice_idx] > slice_threshold
    slice_proto = embeddings[slice_mask].mean(axis=0)
    mode_target = mode(targets[slice_mask], keepdims=True).mode[0]
    ref_proto = embeddings[targets == mode_target].mean(axis=0)

    scores = np.dot(text_embeddings, (slice_proto - ref_proto))
    return scores
