"""Tagging existing datasets: data contract, idempotency, label schemes."""

import fiftyone as fo
import pytest

from conftest import TRAIN_FILE, UNANNOTATED_VAL, make_dataset, save_photo
from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.classes.imagenet import class_table
from imagenetx.errors import ImageNetXError
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset


def _state(ds):
    fields = ["filepath", "tags", "ground_truth", "imagenetx", "last_modified_at"]
    return ds.values([f for f in fields if ds.has_field(f)], _raw=True)


def test_tagging_writes_the_data_contract_and_is_idempotent(photos_dir, tmp_path):
    train = save_photo(tmp_path / TRAIN_FILE[0] / TRAIN_FILE[1], "rocket")
    ds = make_dataset("tag-contract", photos_dir)
    ds.add_sample(fo.Sample(filepath=str(train), tags=["mine"]))

    summary = tag_dataset("tag-contract")
    assert summary.samples == 6
    assert summary.annotated == 4  # 3 val + 1 train
    assert summary.unannotated == 2  # unannotated val image + holiday.jpg
    assert summary.by_split == {"val": 3, "train": 1}
    # the unannotated val image too, from ImageNet's val labels
    assert summary.ground_truth_added == 5

    s = ds.one(fo.ViewField("filepath").ends_with("ILSVRC2012_val_00000001.JPEG"))
    assert s.tags == ["x:background"]
    assert s.ground_truth.label == "sea snake"
    assert s.ground_truth.class_index == 65
    assert s.imagenetx.top_factor == "background"
    assert s.imagenetx.factors == ["pose", "background", "subcategory", "texture"]
    assert s.imagenetx.metaclass == "snake"
    assert s.imagenetx.split == "val" and s.imagenetx.prototype is False
    assert s.imagenetx.real_labels == []
    assert s.imagenetx.one_word == "sand"

    t = ds.one(fo.ViewField("filepath") == str(train))
    assert sorted(t.tags) == ["mine", "x:background"]
    assert t.ground_truth.label == "ladle" and t.imagenetx.split == "train"
    assert t.imagenetx.real_labels is None

    u = ds.one(fo.ViewField("filepath").ends_with(UNANNOTATED_VAL))
    assert u.tags == [] and u.imagenetx is None
    truth = anno.val_labels()[anno.val_number(UNANNOTATED_VAL) - 1]
    assert u.ground_truth.class_index == truth
    assert u.ground_truth.label == class_table().labels[truth]
    h = ds.one(fo.ViewField("filepath").ends_with("holiday.jpg"))
    assert h.tags == [] and h.imagenetx is None and h.ground_truth is None

    # the App filters by these fields: they must be declared in the schema
    assert ds.get_field("imagenetx.top_factor") is not None
    assert ds.get_field("ground_truth.class_index") is not None

    before = _state(ds)
    again = tag_dataset(ds)
    assert again.samples_written == 0 and again.ground_truth_added == 0
    assert _state(ds) == before
    assert ds.count_sample_tags() == {"x:background": 3, "x:color": 1, "mine": 1}


@pytest.mark.parametrize(
    "labels",
    [
        {"ILSVRC2012_val_00000001.JPEG": "sea snake"},
        {"ILSVRC2012_val_00000001.JPEG": "n01751748"},
        {"ILSVRC2012_val_00000001.JPEG": "65"},
        {"ILSVRC2012_val_00000001.JPEG": "Sea_Snake"},
    ],
    ids=["name", "wnid", "index", "other-spelling"],
)
def test_existing_ground_truth_in_any_scheme_gets_its_class_index(photos_dir, labels):
    ds = make_dataset("tag-schemes", photos_dir, gt=labels)
    tag_dataset(ds)
    s = ds.one(fo.ViewField("filepath").ends_with("ILSVRC2012_val_00000001.JPEG"))
    assert s.ground_truth.class_index == 65
    assert s.ground_truth.label == list(labels.values())[0]  # kept as it was


def test_unmappable_labels_are_refused_and_nothing_is_written(photos_dir):
    ds = make_dataset(
        "tag-bad-labels", photos_dir,
        gt={"ILSVRC2012_val_00000001.JPEG": "sea snake",
            "ILSVRC2012_val_00000002.JPEG": "my custom class"},
    )
    before = _state(ds)
    with pytest.raises(ImageNetXError, match="'my custom class'"):
        tag_dataset(ds)
    assert _state(ds) == before
    assert not ds.has_field("imagenetx")


def test_custom_prefix_replaces_only_factor_tags(photos_dir):
    ds = make_dataset("tag-prefix", photos_dir)
    tag_dataset(ds, tag_prefix="ix/")
    assert ds.count_sample_tags() == {"ix/background": 2, "ix/color": 1}


def test_wrong_ground_truth_type_is_refused(photos_dir):
    ds = make_dataset("tag-bad-field", photos_dir)
    ds.set_values("ground_truth", ["a"] * len(ds))
    with pytest.raises(ImageNetXError, match="`gt_field`"):
        tag_dataset(ds)


def test_unknown_dataset_name():
    with pytest.raises(ImageNetXError, match="No FiftyOne dataset named 'nope'"):
        tag_dataset("nope")


def _stores(ds):
    """The project's and the Model Evaluation panel's execution store
    entries of a dataset, with their write times."""
    import fiftyone.core.odm as foo

    return sorted(
        (d["store_name"], d["key"], d.get("updated_at"), repr(d.get("value")))
        for d in foo.get_db_conn().execution_store.find({"dataset_id": ds._doc.id}))


def test_a_retag_writes_nothing_and_leaves_indexes_and_scenarios_as_they_are(
        photos_dir, monkeypatch):
    import imagenetx.benchmarks.base as base
    from imagenetx.store.scenarios import (
        read_scenarios, record_written, write_scenarios, written_scenarios)

    ds = make_dataset("tag-again", photos_dir)
    tag_dataset(ds)
    scenarios = {s["name"] for s in read_scenarios(ds).values()}
    assert {"ImageNet-X: top factor", "ImageNet-X: metaclass"} <= scenarios
    indexes, stores, before = ds.get_index_information(), _stores(ds), _state(ds)
    assert {"tags", "imagenetx.top_factor"} <= set(indexes)

    worked_out = []
    real = base.wanted_scenarios
    monkeypatch.setattr(base, "wanted_scenarios",
                        lambda *a, **k: worked_out.append(1) or real(*a, **k))
    again = tag_dataset(ds)
    assert again.samples_written == 0 and not again.labels_made_unique
    assert _state(ds) == before  # not a sample stamped
    assert ds.get_index_information() == indexes
    assert _stores(ds) == stores  # no scenario, record or write record rewritten
    assert not worked_out  # the samples were not read for the scenarios again

    # what is gone is made again: an index dropped, the scenarios deleted in the panel
    ds.drop_index("imagenetx.top_factor")
    write_scenarios(ds, {})
    tag_dataset(ds)
    assert set(ds.get_index_information()) == set(indexes)
    assert {s["name"] for s in read_scenarios(ds).values()} == scenarios
    assert _state(ds) == before

    # a slicing without its scenario (one a later version adds) gets one
    kept = {i: s for i, s in read_scenarios(ds).items() if s["name"] != "ImageNet-X: metaclass"}
    write_scenarios(ds, kept)
    record_written(ds, {i: r for i, r in written_scenarios(ds).items() if i in kept})
    tag_dataset(ds)
    assert {s["name"] for s in read_scenarios(ds).values()} == scenarios
