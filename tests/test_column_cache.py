"""The panel's column cache on a real FiftyOne database: after a write, the
kept columns equal a fresh read (changed values, a new field, a deleted
field, a re-tag, new and deleted samples, FiftyOne's own writes, a write
that races a recorded one), and a recorded write of one field reads only
that field again (the other columns stay the very same lists)."""

import fiftyone as fo
import numpy as np
import pytest

import imagenetx.store.bulk as bulk
from imagenetx.analysis import compute_ratios
from imagenetx.analysis import columns as cols
from imagenetx.analysis.columns import read_columns
from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset
from imagenetx.store.classifications import write_classifications

N = 400
NAME = "column-cache"
PATHS = ["tags", "imagenetx.top_factor", "ground_truth.class_index",
         "a.class_index", "b.class_index", "b.confidence"]


@pytest.fixture
def ds():
    """N tagged validation file names with two prediction fields ``a``, ``b``."""
    if fo.dataset_exists(NAME):
        fo.delete_dataset(NAME)
    ds = fo.Dataset(NAME)
    ds.add_samples(fo.Sample(filepath=f"/data/val/ILSVRC2012_val_{i:08d}.JPEG")
                   for i in range(1, N + 1))
    tag_dataset(ds)
    ids = ds.values("id")
    labels = anno.val_labels()[:N]
    rng = np.random.default_rng(0)
    write_classifications(ds, "a", ids, labels, confidence=[0.9] * N)
    wrong = np.where(rng.random(N) < 0.3, (labels + 1) % 1000, labels)
    write_classifications(ds, "b", ids, wrong, confidence=rng.random(N).tolist())
    cols._CACHE.clear()
    yield ds
    ds.delete()


def _assert_fresh(view, paths=PATHS):
    """The cached read of ``view`` equals a read without the cache."""
    kept = read_columns(view, paths, ids=True)
    fresh = read_columns(view, paths, ids=True, cache=False)
    assert kept == fresh
    return kept


def _ratios(view):
    return compute_ratios(view, ["a", "b"], correct="class").to_dict()


def _fresh_ratios(view):
    cols._CACHE.clear()
    cols._DERIVED.clear()
    return _ratios(view)


def test_a_recorded_write_of_one_field_reads_only_that_field(ds):
    before = read_columns(ds, PATHS)
    ids = ds.values("id")
    new = (anno.val_labels()[:N] + 7) % 1000
    write_classifications(ds, "a", ids, new, confidence=[0.5] * N)
    after = read_columns(ds, PATHS)
    assert after["a.class_index"] == new.tolist()
    for p in PATHS:
        if p != "a.class_index":
            assert after[p] is before[p]  # kept, not read again
    _assert_fresh(ds)
    # a new field: read alone, the others kept
    write_classifications(ds, "c", ids, new, confidence=[0.5] * N)
    again = read_columns(ds, [*PATHS, "c.class_index"])
    assert again["c.class_index"] == new.tolist()
    assert again["b.class_index"] is before["b.class_index"]
    _assert_fresh(ds, [*PATHS, "c.class_index"])


def test_ratios_after_each_kind_of_write_equal_a_fresh_computation(ds):
    view = ds.match_tags("x:pose", bool=False)
    assert _ratios(view) == _fresh_ratios(view)
    ids = ds.values("id")
    # changed values of a field (recorded), then FiftyOne's own write of it
    write_classifications(ds, "b", ids, anno.val_labels()[:N], confidence=[0.7] * N)
    _assert_fresh(view)
    first = _ratios(view)
    assert first == _fresh_ratios(view)
    ds.set_values("b.class_index", [0] * N)
    _assert_fresh(view)
    assert _ratios(view) != first
    # a re-tag that moves samples into and out of the view
    ds[:5].tag_samples("x:pose")
    ds.match_tags("x:pose").limit(3).untag_samples("x:pose")
    _assert_fresh(view)
    assert _ratios(view) == _fresh_ratios(view)
    # new samples, then deleted ones
    ds.add_samples([fo.Sample(filepath=f"/data/val/ILSVRC2012_val_{i:08d}.JPEG")
                    for i in range(N + 1, N + 21)])
    tag_dataset(ds)
    kept = _assert_fresh(view)
    assert len(kept["id"]) == len(view)
    ds.delete_samples(ds.skip(10).limit(7))
    kept = _assert_fresh(view)
    assert len(kept["id"]) == len(view)
    assert _ratios(view) == _fresh_ratios(view)


def test_a_deleted_field_is_not_served_from_the_cache(ds):
    before = read_columns(ds, PATHS)
    assert any(v is not None for v in before["a.class_index"])
    ds.delete_sample_field("a")  # FiftyOne stamps no sample for this
    assert read_columns(ds, ["a.class_index"])["a.class_index"] == [None] * N
    # made again with other values through FiftyOne, on some samples only
    ds.add_sample_field("a", fo.EmbeddedDocumentField, embedded_doc_type=fo.Classification)
    ds[:10].set_values("a", [fo.Classification(label="x", class_index=3)] * 10)
    _assert_fresh(ds)


def test_a_sample_changed_while_a_recorded_write_runs_is_read_again_whole(ds, monkeypatch):
    read_columns(ds, PATHS)
    racer = ds.first().id
    real = bulk.begin_write

    def record_then_race(dataset, fields):
        stamp = real(dataset, fields)
        # another client re-tags a sample after the write began, before the
        # write reaches that sample
        ds.select(racer).tag_samples("raced")
        return stamp

    monkeypatch.setattr(bulk, "begin_write", record_then_race)
    write_classifications(ds, "a", ds.values("id"), [5] * N, confidence=[0.5] * N)
    kept = _assert_fresh(ds)
    assert "raced" in kept["tags"][kept["id"].index(racer)]


def test_consecutive_recorded_writes_chain(ds):
    before = read_columns(ds, PATHS)
    ids = ds.values("id")
    write_classifications(ds, "a", ids, [1] * N, confidence=[0.5] * N)
    write_classifications(ds, "b", ids, [2] * N, confidence=[0.5] * N)
    after = _assert_fresh(ds)
    assert after["tags"] is before["tags"]
    assert after["a.class_index"] == [1] * N and after["b.class_index"] == [2] * N


def test_a_re_tag_reads_only_those_samples_and_keeps_the_other_columns(ds):
    before = read_columns(ds, PATHS)
    ds[:3].tag_samples("looked-at")
    after = _assert_fresh(ds)
    assert after["tags"] is not before["tags"]
    assert all("looked-at" in t for t in after["tags"][:3])
    for p in PATHS[1:]:
        assert after[p] is before[p]


def test_views_take_a_recorded_write_from_the_datasets_columns(ds, monkeypatch):
    """After a recorded write, a view of the dataset (here filtered and in
    another order) takes the written field's column from the dataset's,
    read once for both; where the view's stages name the written field, or
    a sample was deleted, the view reads its ids again."""
    from fiftyone import ViewField as F

    view = ds.match(F("b.confidence") > 0.2).sort_by("b.confidence", reverse=True)
    other = ds.match_tags("x:texture", bool=False).skip(5)
    for v in (ds, view, other):
        read_columns(v, PATHS)
    reads = []
    read = cols._read
    monkeypatch.setattr(cols, "_read", lambda v, p, *a: reads.append(p) or read(v, p, *a))
    ids = ds.values("id")
    new = (anno.val_labels()[:N] + 3) % 1000
    write_classifications(ds, "a", ids, new, confidence=[0.5] * N)
    for v in (other, view, ds):  # other first: it brings the dataset's columns up to date
        read_columns(v, PATHS)
    assert reads == [["a.class_index"]], reads  # once, for the dataset
    for v in (other, view, ds):
        _assert_fresh(v)
    # a write of the field the view sorts and filters by: its ids are read again
    reads.clear()
    write_classifications(ds, "b", ids, new, confidence=np.linspace(0, 1, N).tolist())
    _assert_fresh(ds)
    _assert_fresh(view)
    assert ["b.class_index", "b.confidence"] in reads, reads
    # a deleted sample: the count changed, every view reads its ids again
    ds.delete_samples(ids[:2])
    write_classifications(ds, "a", ids[2:], new[2:], confidence=[0.7] * (N - 2))
    for v in (other, view, ds):
        _assert_fresh(v)


def test_a_view_on_last_modified_at_follows_a_recorded_write(ds):
    """The App's "modified since" filter and "the 50 latest": a recorded
    write of another field stamps its samples, so the view's samples and
    order change though its stages name none of the written fields."""
    from fiftyone import ViewField as F

    ids = ds.values("id")
    since = ds.match(F("last_modified_at") > ds.max("last_modified_at"))
    latest = ds.sort_by("last_modified_at", reverse=True).limit(50)
    for v in (ds, since, latest):
        read_columns(v, PATHS)
    assert read_columns(since, PATHS, ids=True)["id"] == []
    write_classifications(ds, "a", ids[-10:], [3] * 10, confidence=[0.5] * 10)
    assert sorted(_assert_fresh(since)["id"]) == sorted(ids[-10:])
    assert set(_assert_fresh(latest)["id"][:10]) == set(ids[-10:])
    assert _ratios(latest) == _fresh_ratios(latest)


def test_a_write_stamped_behind_the_newest_stamp_is_read(ds):
    """A second client whose clock runs behind rewrites a field: the newest
    stamp goes backwards, and the kept columns are read again."""
    from datetime import timedelta

    before = read_columns(ds, PATHS)
    assert set(before["b.class_index"]) != {5}
    behind = ds.max("last_modified_at") - timedelta(hours=1)
    # what FiftyOne's own set_values does from a client one hour behind
    ds._sample_collection.update_many(
        {}, {"$set": {"b.class_index": 5, "last_modified_at": behind}})
    assert _assert_fresh(ds)["b.class_index"] == [5] * N
