"""Unique class labels: FiftyOne's evaluation compares label strings, so
``eval_<field>`` must equal class-index correctness. Covers the class table,
name resolution, a crane (bird) predicted as a crane (machine), a ground
truth in names two classes share made unique by a tag, and the contract on
all 50,000 validation images."""

import csv
import os

import fiftyone as fo
import numpy as np
import pytest

from authors_tables import read_predictions
from conftest import SHARED_DATA
from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset
from imagenetx.classes.imagenet import QUALIFIED_LABELS, class_table
from imagenetx.classes.labels import labels_to_indices
from imagenetx.errors import ImageNetXError
from imagenetx.models.prediction_files import import_predictions
from imagenetx.store.classifications import write_classifications
from imagenetx.store.evaluation import evaluate_predictions

RESNET_CSV = SHARED_DATA / "predictions" / "ResNet50.csv"

#: annotated validation images of the four classes whose names are shared
CRANE_BIRD = "ILSVRC2012_val_00001716.JPEG"  # 134
CRANE_MACHINE = "ILSVRC2012_val_00015188.JPEG"  # 517
MAILLOT = "ILSVRC2012_val_00003007.JPEG"  # 638, tights
TANK_SUIT = "ILSVRC2012_val_00047553.JPEG"  # 639
#: a validation image of class 638 that ImageNet-X does not annotate
UNANNOTATED_MAILLOT = "ILSVRC2012_val_00000117.JPEG"


def _dataset(name: str, samples: list) -> fo.Dataset:
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    ds.add_samples(samples)
    return ds


def _by_file(ds, *fields) -> dict:
    ds.reload()
    columns = ds.values(["filepath", *fields])
    return {os.path.basename(row[0]): row[1:] for row in zip(*columns)}


def test_labels_are_unique_and_keep_the_unshared_names():
    table = class_table()
    assert len(table.labels) == 1000 and len(set(table.labels)) == 1000
    assert table.shared_names == {"crane", "maillot"}
    assert [table.labels[i] for i in (134, 517, 638, 639)] == [
        "crane (bird)", "crane (machine)", "maillot (tights)",
        "maillot (tank suit)"]
    changed = {i for i in range(1000) if table.labels[i] != table.names[i]}
    assert changed == {134, 517, 638, 639}
    assert {table.wnids[i] for i in changed} == set(QUALIFIED_LABELS)
    # no label equals a shared name: labels of earlier versions stand out
    assert not table.shared_names & set(table.labels)
    # the annotation files agree: these images are of those classes
    val = anno.load_split("val")
    assert [int(val.class_index[val.row_of[f]])
            for f in (CRANE_BIRD, CRANE_MACHINE, MAILLOT, TANK_SUIT)] == [
        134, 517, 638, 639]
    assert anno.class_of_file(UNANNOTATED_MAILLOT) == 638
    assert UNANNOTATED_MAILLOT not in val.row_of


def test_unique_labels_and_shared_names_resolve():
    assert list(labels_to_indices(
        ["crane (bird)", "Crane (machine)", "maillot_(tank_suit)",
         "maillot (tights)", "maillot, tank suit"]
    )) == [134, 517, 639, 638, 639]
    # the shared names of earlier versions still need a hint
    assert list(labels_to_indices(["crane", "maillot"], hints=[134, 639])) == [
        134, 639]
    with pytest.raises(ImageNetXError, match="'maillot'"):
        labels_to_indices(["maillot"])


def test_a_crane_bird_predicted_as_a_crane_machine_is_wrong(tmp_path):
    files = [CRANE_BIRD, CRANE_MACHINE, MAILLOT, TANK_SUIT]
    ds = _dataset("labels-crane",
                  [fo.Sample(filepath=f"/data/val/{f}") for f in files])
    tag_dataset(ds)
    predicted = {CRANE_BIRD: 517, CRANE_MACHINE: 517, MAILLOT: 639,
                 TANK_SUIT: 639}
    path = tmp_path / "preds.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["file_name", "predicted_class", "predicted_probability"])
        w.writerows([name, k, 0.9] for name, k in predicted.items())
    import_predictions(ds, path, "model")

    result = evaluate_predictions(ds, "model")
    assert result.key == "eval_model" and result.evaluated == 4
    assert result.accuracy == 0.5
    got = _by_file(ds, "ground_truth.label", "model.label", "eval_model")
    assert got[CRANE_BIRD] == ("crane (bird)", "crane (machine)", False)
    assert got[CRANE_MACHINE] == ("crane (machine)", "crane (machine)", True)
    assert got[MAILLOT] == ("maillot (tights)", "maillot (tank suit)", False)
    assert got[TANK_SUIT] == ("maillot (tank suit)", "maillot (tank suit)", True)


def _shared_name_dataset(name: str) -> fo.Dataset:
    """A user's ground truth in the toolkit's names, two of which two
    classes share (no class index: the user's own labels), and predictions
    as ``predict`` writes them (unique labels, class indices)."""

    def gt(label):
        return fo.Classification(label=label)

    def pred(index):
        return fo.Classification(label=class_table().labels[index], class_index=index,
                                 confidence=0.9)

    rows = [
        # file, ground truth, prediction
        (CRANE_BIRD, gt("crane"), pred(517)),
        (CRANE_MACHINE, gt("crane"), pred(517)),
        (MAILLOT, gt("maillot"), pred(639)),
        (TANK_SUIT, gt("maillot"), pred(639)),
    ]
    ds = _dataset(name, [
        fo.Sample(filepath=f"/data/val/{f}", ground_truth=g, resnet=p) for f, g, p in rows
    ])
    ds.add_dynamic_sample_fields()
    return ds


def test_shared_names_in_the_ground_truth_are_refused_then_made_unique_by_a_tag():
    ds = _shared_name_dataset("labels-shared")
    result = evaluate_predictions(ds, "resnet")
    assert result.key is None and "`tag_dataset(gt_field='ground_truth')`" in result.note
    assert "'crane'" in result.note or "'maillot'" in result.note
    assert not ds.has_evaluation("eval_resnet")

    summary = tag_dataset(ds)  # the annotations say each image's class
    assert summary.labels_made_unique == {"ground_truth": 4}
    assert "4 'ground_truth' labels made unique" in str(summary)
    got = _by_file(ds, "ground_truth.label", "ground_truth.class_index", "resnet.label")
    assert got[CRANE_BIRD] == ("crane (bird)", 134, "crane (machine)")
    assert got[CRANE_MACHINE] == ("crane (machine)", 517, "crane (machine)")
    assert got[MAILLOT] == ("maillot (tights)", 638, "maillot (tank suit)")
    assert got[TANK_SUIT] == ("maillot (tank suit)", 639, "maillot (tank suit)")

    result = evaluate_predictions(ds, "resnet")
    assert result.evaluated == 4 and result.accuracy == 0.5
    assert _by_file(ds, "eval_resnet")[CRANE_BIRD] == (False,)  # a crane is not a crane
    state = ds.values(["ground_truth", "resnet", "last_modified_at"], _raw=True)
    again = tag_dataset(ds)
    assert again.samples_written == 0 and again.labels_made_unique == {}
    assert ds.values(["ground_truth", "resnet", "last_modified_at"], _raw=True) == state
    ds.delete()


@pytest.mark.heavy  # all 50,000 val file names
@pytest.mark.skipif(not RESNET_CSV.is_file(), reason=f"{RESNET_CSV} is absent")
def test_eval_equals_class_index_correctness_on_all_val_images():
    name = "labels-contract"
    ds = _dataset(name, [])
    files = [f"ILSVRC2012_val_{i:08d}.JPEG" for i in range(1, 50001)]
    ids = ds.add_samples(
        [fo.Sample(filepath=f"/data/val/{f}") for f in files], validate=False
    )
    # ground truth on every image, annotated or not, as `load` writes it
    write_classifications(ds, "ground_truth", ids, anno.val_labels())
    tag_dataset(ds)
    s = import_predictions(ds, RESNET_CSV, "resnet50")
    assert s.samples_written == 50000
    result = evaluate_predictions(ds, "resnet50")
    assert result.evaluated == 50000

    files_, evals, pred, gt = ds.values(
        ["filepath", "eval_resnet50", "resnet50.class_index",
         "ground_truth.class_index"])
    pred, gt = np.array(pred), np.array(gt)
    assert np.array_equal(np.array(evals), pred == gt)
    # and with the toolkit's own CSV and ImageNet's labels, read apart
    rows = read_predictions("ResNet50")
    truth = anno.val_labels()
    by_number = {anno.val_number(os.path.basename(p)): e
                 for p, e in zip(files_, evals)}
    expected = [rows[f][0] == truth[k] for k, f in enumerate(files)]
    assert [by_number[k + 1] for k in range(50000)] == expected
    assert result.accuracy == pytest.approx(np.mean(expected), abs=0)
    # the confusions that shared names used to hide are counted wrong
    names = np.array(class_table().names)
    hidden = (names[pred] == names[gt]) & (pred != gt)
    assert hidden.sum() > 0 and not np.array(evals)[hidden].any()
    fo.delete_dataset(name)


def test_a_second_tag_of_crane_and_maillot_images_changes_nothing():
    """Ground truth written with the unique labels is left alone by a
    second run, also for "Cardigan" (the corgi) and "cardigan" (the
    sweater), which name resolution cannot tell apart without the image's
    class: they must not be rewritten to themselves."""
    val = anno.load_split("val")
    wanted = {134, 517, 638, 639, 264, 474}
    files = [f for c in sorted(wanted) for f in
             val.file_names[val.class_index == c][:2]]
    ds = fo.Dataset("unique-retag")
    ds.add_samples([fo.Sample(filepath=f"/data/val/{f}") for f in files])
    first = tag_dataset(ds)
    assert first.ground_truth_added == len(files)
    assert set(ds.distinct("ground_truth.label")) == {
        "crane (bird)", "crane (machine)", "maillot (tights)",
        "maillot (tank suit)", "Cardigan", "cardigan"}
    again = tag_dataset(ds)
    assert again.samples_written == 0 and not again.labels_made_unique
    ds.delete()
