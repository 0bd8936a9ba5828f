"""Error-aware slices in an embedding space (imagenetx.metrics.error_slices):
Domino's mixture (EM equal to the authors' code), planted failures of
several kinds recovered on held-out samples, the error terms doing the
work, the mixture without them pooled for failures across classes, the statistics the held-out members' own, and bad input refused in
one line."""

import numpy as np
import pytest

from domino_reference import DominoMixture as AuthorsMixture
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.error_slices import (
    DominoMixture,
    categorical_terms,
    find_error_slices,
)
from imagenetx.metrics.stats import wilson_interval


def blobs(n_blobs=12, per_blob=150, d=64, seed=0, spread=4):
    """Well separated Gaussian clusters: ``(embeddings, blob of each row)``."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_blobs, d)) * spread
    blob = np.repeat(np.arange(n_blobs), per_blob)
    return centres[blob] + rng.normal(size=(len(blob), d)), blob


def predictions(classes, planted, rate=0.10, seed=1, n_classes=None, to=None):
    """``(correct, predicted)``: wrong where ``planted`` (predicting ``to``, or
    the next class) and on a random ``rate`` of the rest (the next class)."""
    rng = np.random.default_rng(seed)
    n_classes = n_classes or classes.max() + 1
    wrong = planted | (rng.random(len(classes)) < rate)
    predicted = np.where(wrong, (classes + 1) % n_classes, classes)
    if to is not None:
        predicted[planted] = to
    return predicted == classes, predicted


def recovery(found, truth, rank=0):
    """The slice's precision and recall of ``truth`` on held-out samples."""
    held = ~found.fitted
    rows = found.slices[rank].held_out
    hit = truth[rows].sum()
    return hit / max(1, len(rows)), hit / (truth & held).sum()


@pytest.mark.parametrize("weight, components, soft", [
    (1, 12, True), (10, 12, False), (40, 20, True), (0, 9, True)])
def test_em_equals_dominos_own(weight, components, soft):
    """Built data, the same confusion initialisation (seeded noise) and
    weights: the responsibilities after EM are the authors' to 1e-6
    (``tests/domino_reference.py``, Domino's code on scikit-learn's
    GaussianMixture), dense soft predictions and sparse hard ones alike."""
    rng = np.random.default_rng(0)
    n, d, c = 600, 6, 3
    cls = rng.integers(0, c, n)
    z = rng.normal(size=(n, d)) + cls[:, None]
    pred = np.where(rng.random(n) < 0.3, (cls + 1) % c, cls)
    y = np.eye(c)[cls]
    if soft:
        y_hat = rng.dirichlet(np.ones(c), n) * 0.4
        y_hat[np.arange(n), pred] += 0.6
    else:
        y_hat = np.eye(c)[pred]
    authors = AuthorsMixture(components, covariance_type="diag", init_params="confusion",
                             random_state=3, y_log_likelihood_weight=weight,
                             y_hat_log_likelihood_weight=weight)
    authors.fit_predict(z, y, y_hat)
    expected = authors.predict_proba(z, y, y_hat)
    if soft:
        sy, sy_hat = y, y_hat
    else:  # this module's sparse columns (with the empty "rest" column dropped)
        sy, sy_hat = categorical_terms(pred == cls, cls, pred)
        sy_hat = sy_hat[:, :c]
    ours = DominoMixture(components, weight, weight, seed=3).fit(z, sy, sy_hat)
    assert ours.n_iter == authors.n_iter_
    np.testing.assert_allclose(ours.predict_proba(z, sy, sy_hat), expected, atol=1e-6, rtol=0)
    np.testing.assert_allclose(ours.y_hat_probs, authors.y_hat_probs, atol=1e-6)


def test_planted_failure_is_the_top_slice_on_held_out_samples():
    x, blob = blobs()
    classes = blob % 6
    truth = blob == 3
    correct, predicted = predictions(classes, truth)
    found = find_error_slices(x, correct, k=3, targets=classes, predicted=predicted)
    precision, recall = recovery(found, truth)
    assert precision >= 0.8 and recall >= 0.8, (precision, recall)
    top = found.slices[0]
    # the split: seeded, recorded, half and half; statistics of held-out members
    assert found.split == {"seed": 0, "fit_share": 0.5, "fit": 900, "held_out": 900}
    assert found.held_out and found.fitted.sum() == 900
    assert not found.fitted[top.held_out].any() and set(top.held_out) <= set(top.members)
    assert top.size == len(top.held_out)
    assert top.correct == correct[top.held_out].sum()
    assert top.accuracy == pytest.approx(top.correct / top.size)
    held_error = 1 - correct[~found.fitted].mean()
    assert top.error_ratio == pytest.approx((1 - top.accuracy) / held_error)
    assert top.interval == pytest.approx(wilson_interval(top.correct, top.size))
    assert top.fit_size == np.isin(found.assignment[found.fitted], top.components).sum()
    assert set(top.typical) <= set(top.held_out)
    # every sample's membership: soft (rows sum to 1) and hard (the most likely)
    assert found.probabilities.shape == (len(x), found.components)
    np.testing.assert_allclose(found.probabilities.sum(axis=1), 1)
    assert (found.assignment == found.probabilities.argmax(axis=1)).all()
    # best first, no row in two slices
    bounds = [1 - wilson_interval(round(s.fit_accuracy * s.fit_size), s.fit_size)[1]
              for s in found.slices]
    assert bounds == sorted(bounds, reverse=True)
    rows = np.concatenate([s.members for s in found.slices])
    assert len(rows) == len(set(rows.tolist()))
    assert found.slices[0].to_dict()["size"] == top.size


def test_fit_on_all_is_said_as_such():
    x, blob = blobs(n_blobs=6, per_blob=60, d=16)
    classes = blob % 3
    correct, predicted = predictions(classes, blob == 2)
    found = find_error_slices(x, correct, k=2, targets=classes, predicted=predicted,
                              fit_share=None)
    assert not found.held_out and found.split["fit_share"] is None
    assert found.fitted.all()
    top = found.slices[0]
    assert top.size == len(top.members) == top.fit_size


def test_two_unrelated_failures_stay_two_slices():
    """Two far-apart clusters of two classes, both failing: two slices, one
    each (no merge joins them)."""
    x, blob = blobs()
    classes = blob % 6
    a, b = blob == 3, blob == 10
    correct, predicted = predictions(classes, a | b)
    found = find_error_slices(x, correct, k=3, targets=classes, predicted=predicted)
    got = {}
    for rank in range(2):
        for name, truth in (("a", a), ("b", b)):
            p, r = recovery(found, truth, rank)
            if p >= 0.8 and r >= 0.8:
                got[name] = rank
    assert sorted(got) == ["a", "b"] and got["a"] != got["b"], got


def test_failure_on_a_predicted_class_not_a_region():
    """Images of class 2 taken for class 0, at random within the four
    overlapping clusters class 2 lives in: the embedding alone cannot find
    them, the confusion cell does (Domino starts two or three components on
    that cell; joined, they are one slice)."""
    x, blob = blobs(spread=1)
    classes = blob % 3
    rng = np.random.default_rng(5)
    truth = (classes == 2) & (rng.random(len(x)) < 0.4)
    correct, predicted = predictions(classes, truth, to=0)
    found = find_error_slices(x, correct, k=3, targets=classes, predicted=predicted)
    precision, recall = recovery(found, truth)
    assert precision >= 0.8 and recall >= 0.8, (precision, recall)
    assert len(found.slices[0].components) > 1
    unjoined = find_error_slices(x, correct, k=3, targets=classes, predicted=predicted,
                                 join=False)
    assert recovery(unjoined, truth)[1] < 0.8


def test_the_error_terms_steer_the_mixture():
    """A failure that the embeddings split from the rest only weakly (half a
    cluster, shifted by one standard deviation along one axis): Domino's
    weights recover it, weight 0 (a Gaussian mixture of the embeddings) does
    not."""
    x, blob = blobs()
    classes = blob % 6
    rng = np.random.default_rng(7)
    truth = (blob == 3) & (rng.random(len(x)) < 0.5)
    x[truth, 0] += 1.0
    correct, predicted = predictions(classes, truth)
    args = dict(k=3, targets=classes, predicted=predicted)
    with_terms = recovery(find_error_slices(x, correct, **args), truth)
    assert min(with_terms) >= 0.8, with_terms
    without = find_error_slices(x, correct, y_weight=0, y_hat_weight=0, **args)
    assert not without.slices or min(recovery(without, truth)) < 0.8



def test_a_failing_region_across_the_classes_is_found_without_class_terms():
    """One cluster all wrong, its images of 16 classes drawn at random (a
    failure of a region, not of a class): Domino's class terms cut it by
    confusion cell, so its slices alone do not hold it with precision and
    recall >= 0.8; the default pools the slices of the same mixture without
    class terms, which hold it (the slices mostly it, together), and no
    sample is in two slices."""
    x, blob = blobs()
    classes = np.random.default_rng(2).integers(0, 16, len(x))
    truth = blob == 3
    correct, predicted = predictions(classes, truth)
    args = dict(k=5, targets=classes, predicted=predicted)

    def recovered(found):
        mine = [s for s in found.slices if len(s.held_out) and
                truth[s.held_out].mean() >= 0.5]
        rows = np.unique(np.concatenate([s.held_out for s in mine] + [[]])).astype(int)
        hit = truth[rows].sum()
        return hit / max(len(rows), 1), hit / (truth & ~found.fitted).sum(), mine

    found = find_error_slices(x, correct, **args)
    precision, recall, mine = recovered(found)
    assert found.across_classes and all(s.across_classes for s in mine)
    assert precision >= 0.8 and recall >= 0.8, (precision, recall)
    rows = np.concatenate([s.members for s in found.slices])
    assert len(rows) == len(set(rows.tolist()))
    # every pooled slice errs above average on its own fitted members, best first
    average = 1 - correct[found.fitted].mean()
    assert all(1 - s.fit_accuracy > average for s in found.slices)
    bounds = [1 - wilson_interval(round(s.fit_accuracy * s.fit_size), s.fit_size)[1]
              for s in found.slices]
    assert bounds == sorted(bounds, reverse=True)
    assert [s.rank for s in found.slices] == list(range(1, len(found.slices) + 1))
    alone = find_error_slices(x, correct, across_classes=False, **args)
    assert not alone.across_classes and not any(s.across_classes for s in alone.slices)
    assert min(recovered(alone)[:2]) < 0.8

def test_soft_predictions_enter_the_prediction_term():
    """The confidence splits a prediction's probability between its class
    and the rest; the logits' probabilities are used as they are."""
    correct = np.array([True, False])
    y, y_hat = categorical_terms(correct, [3, 5], [3, 7], confidence=[0.9, 0.6])
    assert y.toarray().tolist() == [[1, 0, 0], [0, 1, 0]]  # classes 3, 5, 7
    np.testing.assert_allclose(y_hat.toarray(), [[0.9, 0, 0, 0.1], [0, 0, 0.6, 0.4]])
    probs = np.full((2, 10), 0.05)
    probs[0, 3] = probs[1, 7] = 0.6
    _, dense = categorical_terms(correct, [3, 5], [3, 7], probabilities=probs)
    np.testing.assert_allclose(dense, [[0.6, 0.05, 0.05, 0.3], [0.05, 0.05, 0.6, 0.3]])
    # correctness only: one class, right or wrong
    y, y_hat = categorical_terms(correct)
    assert y.shape == (2, 1) and y_hat.toarray().tolist() == [[1, 0], [0, 1]]


def test_same_input_same_slices():
    x, blob = blobs(n_blobs=6, per_blob=60, d=16)
    correct, predicted = predictions(blob % 3, blob == 2)
    a = find_error_slices(x, correct, k=2, seed=3)
    b = find_error_slices(x, correct, k=2, seed=3)
    assert [s.members.tolist() for s in a.slices] == [s.members.tolist() for s in b.slices]


def test_no_slice_when_errors_are_even():
    x, blob = blobs(n_blobs=4, per_blob=50, d=8)
    assert find_error_slices(x, np.ones(len(x), dtype=bool), k=2).slices == []


@pytest.mark.parametrize("make, words", [
    (lambda x, c: (x[:, :, None], c, 2), "one vector of the same length"),
    (lambda x, c: (x[:10], c, 2), "one embedding per prediction"),
    (lambda x, c: (np.where(np.arange(len(x))[:, None] == 5, np.nan, x), c, 2),
     "NaN or infinite values (row 5 first)"),
    (lambda x, c: (x, c, len(x) + 1), "`k=201` must be between 1"),
    (lambda x, c: (x, c, 0), "`k=0` must be between 1"),
])
def test_bad_input_one_line(make, words):
    x, blob = blobs(n_blobs=4, per_blob=50, d=8)
    with pytest.raises(ImageNetXError) as e:
        find_error_slices(*make(x, blob != 1))
    assert words in str(e.value) and "\n" not in str(e.value)


def test_fit_share_out_of_range_one_line():
    x, blob = blobs(n_blobs=4, per_blob=50, d=8)
    with pytest.raises(ImageNetXError, match=r"`fit_share=1.5` must be between 0 and 1"):
        find_error_slices(x, blob != 1, fit_share=1.5)


def test_texts_ranked_by_what_sets_a_slice_apart():
    """Known geometry: text i is axis i; every image leans on axis 0 (what
    all share), the slice's images also on axis 3: axis 3's text ranks
    first, although axis 0's is as similar to the slice's prototype."""
    from imagenetx.metrics.error_slices import rank_texts

    rng = np.random.default_rng(0)
    d, n = 8, 200
    x = np.zeros((n, d))
    x[:, 0] = 1.0
    x[:40, 3] = 1.0
    x[40:, 5] = rng.random(n - 40) * 0.5
    x += rng.normal(scale=0.01, size=x.shape)
    texts = np.eye(d)
    ranked = rank_texts(x, np.arange(40), texts, top=2)
    assert ranked[0][0] == 3
    assert ranked[0][1] > ranked[1][1]
    assert ranked[0][2] == pytest.approx(np.sqrt(0.5), abs=0.02)  # cosine to (1,0,0,1)/√2
    with pytest.raises(ImageNetXError, match="with the same image-text model"):
        rank_texts(x, np.arange(40), np.eye(4))


def test_a_slice_is_described_against_its_own_class_as_domino_describes():
    """A slice of one class's drawings: under the whole dataset's mean
    contrast (the old ranking) the class's own text wins, under Domino's
    contrast with the slice's class the drawing's does. The scores are those
    of Domino's ``describe`` (``tests/domino_reference.py``: the last six
    lines of ``domino/_describe/__init__.py`` at 34a3179: ``slice_mask``,
    ``slice_proto``, ``mode_target``, ``ref_proto``, ``scores``) on the same
    unit vectors, to the last bit."""
    from domino_reference import describe
    from scipy.stats import mode

    from imagenetx.metrics.error_slices import class_reference, rank_texts

    rng = np.random.default_rng(0)
    d = 6  # axis 0: class 0 ("tench"), 1: class 1 ("goldfish"), 2: "a drawing"
    targets = np.repeat([0, 1], 100)
    x = np.zeros((200, d))
    x[targets == 0, 0] = 1.0
    x[targets == 1, 1] = 1.0
    members = np.arange(30)  # 30 of class 0's images are drawings
    x[members, 2] = 0.3
    x += rng.normal(scale=0.01, size=x.shape)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    texts = np.eye(3, d)
    old = rank_texts(unit, members, texts, top=3)
    assert old[0][0] == 0  # named by its class
    ours = rank_texts(unit, members, texts, top=3,
                      reference=class_reference(targets, members))
    assert ours[0][0] == 2  # named by what sets it apart from its class
    soft = np.where(np.isin(np.arange(200), members), 0.9, 0.1)[:, None]
    theirs = describe(unit, targets, soft, texts)
    np.testing.assert_array_equal([s for _, s, _ in sorted(ours)], theirs)
    # a tie: the smaller class, as scipy's mode (Domino's)
    tied = np.concatenate([np.arange(100, 115), np.arange(15)])
    assert set(targets[class_reference(targets, tied)]) == \
        {mode(targets[tied], keepdims=True).mode[0]} == {0}
