"""Error-aware slices in an embedding space (imagenetx.metrics.error_slices):
a planted failure on clusters of known geometry is recovered, the statistics
are the slice's own, and bad input is refused in one line."""

import numpy as np
import pytest

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.error_slices import find_error_slices
from imagenetx.metrics.stats import wilson_interval


def blobs(n_blobs=12, per_blob=150, d=64, seed=0):
    """Well separated Gaussian clusters: ``(embeddings, blob of each row)``."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_blobs, d)) * 4
    blob = np.repeat(np.arange(n_blobs), per_blob)
    return centres[blob] + rng.normal(size=(len(blob), d)), blob


def planted(blob, bad=3, rate=0.10, seed=1):
    """Correctness: wrong on every row of blob ``bad`` and on a random
    ``rate`` of the rest."""
    rng = np.random.default_rng(seed)
    wrong = (blob == bad) | (rng.random(len(blob)) < rate)
    return ~wrong


def test_planted_failure_is_the_top_slice():
    x, blob = blobs()
    correct = planted(blob)
    found = find_error_slices(x, correct, k=3)
    top = found.slices[0]
    members = np.zeros(len(x), dtype=bool)
    members[top.members] = True
    truth = blob == 3
    precision = (members & truth).sum() / members.sum()
    recall = (members & truth).sum() / truth.sum()
    assert precision >= 0.8 and recall >= 0.8, (precision, recall)
    # the statistics are those of the members
    assert top.size == len(top.members) == members.sum()
    assert top.correct == correct[top.members].sum()
    assert top.accuracy == pytest.approx(top.correct / top.size)
    assert top.error_ratio == pytest.approx((1 - top.accuracy) / (1 - correct.mean()))
    assert top.interval == pytest.approx(wilson_interval(top.correct, top.size))
    assert set(top.typical) <= set(top.members)
    # best first, every slice worse than average, no row in two slices
    accuracies = [s.accuracy for s in found.slices]
    assert accuracies == sorted(accuracies)
    assert all(s.error_ratio > 1 for s in found.slices)
    rows = np.concatenate([s.members for s in found.slices])
    assert len(rows) == len(set(rows.tolist()))
    assert found.slices[0].to_dict()["size"] == top.size


def test_same_input_same_slices():
    x, blob = blobs(n_blobs=6, per_blob=60, d=16)
    correct = planted(blob, bad=2)
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
        find_error_slices(*make(x, planted(blob, bad=1)))
    assert words in str(e.value) and "\n" not in str(e.value)


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
    with pytest.raises(ImageNetXError, match="describe with the image-text model"):
        rank_texts(x, np.arange(40), np.eye(4))
