"""Predictions in: the toolkit's CSV and testbed pickles onto a dataset, the
`import-predictions` command, and the "Import predictions" operator."""

import csv
import os
import pickle
import subprocess
import sys

import fiftyone as fo
import fiftyone.operators as foo
import numpy as np
import pytest

from conftest import REPO, SHARED_DATA
from imagenetx.errors import ImageNetXError
from imagenetx.classes.imagenet import class_table
from imagenetx.models.prediction_files import (
    _val_order,
    import_predictions,
    read_predictions,
)

RESNET_CSV = SHARED_DATA / "predictions" / "ResNet50.csv"
needs_csv = pytest.mark.skipif(
    not RESNET_CSV.is_file(), reason=f"{RESNET_CSV} is absent"
)

#: the last val files are left out of the big dataset: their CSV rows match
#: no sample
LEFT_OUT = 5
#: samples that no prediction row names
EXTRAS = [
    "/data/other/holiday.jpg",
    "/data/train/n01440764/n01440764_10026.JPEG",
    "/data/val/ILSVRC2012_val_00050001.JPEG",
]

SMALL_FILES = [f"ILSVRC2012_val_{i:08d}.JPEG" for i in (1, 2, 3, 4)]


def _csv_rows(path) -> dict:
    """{file name: (class, probability)}, read independently of the library."""
    with open(path, newline="") as f:
        return {
            r["file_name"]: (int(r["predicted_class"]),
                             float(r["predicted_probability"]))
            for r in csv.DictReader(f)
        }


@pytest.fixture(scope="module")
def resnet_rows():
    if not RESNET_CSV.is_file():
        pytest.skip(f"{RESNET_CSV} is absent")
    return _csv_rows(RESNET_CSV)


@pytest.fixture(scope="module")
def val_dataset():
    """The 50,000 val file names minus the last few, plus files no
    prediction file names. No images needed."""
    name = "pred-val"
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    paths = [f"/data/val/ILSVRC2012_val_{i:08d}.JPEG"
             for i in range(1, 50001 - LEFT_OUT)] + EXTRAS
    ds.add_samples([fo.Sample(filepath=p) for p in paths], validate=False)
    return ds


def _small_dataset(name):
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    ds.add_samples(
        [fo.Sample(filepath=f"/data/val/{f}") for f in SMALL_FILES]
        + [fo.Sample(filepath="/data/other/cat.jpg")]
    )
    return ds


def _write_csv(path, rows, header=("file_name", "predicted_class",
                                   "predicted_probability")):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def _logits_like(classes, probs) -> np.ndarray:
    """Logits whose argmax is ``classes`` and whose softmax max is
    ``probs``: 0 everywhere but log(999 p / (1 - p)) at the class."""
    p = np.clip(np.asarray(probs, np.float64), 1e-6, 1 - 1e-9)
    logits = np.zeros((len(classes), 1000), np.float32)
    logits[np.arange(len(classes)), classes] = np.log(999 * p / (1 - p))
    return logits


# ------------------------------------------------------------------ library


@needs_csv
def test_csv_import_counts_and_values(val_dataset, resnet_rows):
    s = import_predictions(val_dataset, RESNET_CSV, "resnet50")
    assert s.rows == 50000
    assert s.samples == 50000 - LEFT_OUT + len(EXTRAS)
    assert s.samples_written == 50000 - LEFT_OUT
    assert s.rows_not_in_dataset == LEFT_OUT
    assert s.samples_without_row == len(EXTRAS)
    assert s.model == "ResNet50" and s.format == "csv" and not s.replaced
    assert set(s.missing_examples) <= {
        f"ILSVRC2012_val_{i:08d}.JPEG" for i in range(50001 - LEFT_OUT, 50001)}
    assert f"{LEFT_OUT:,} rows for files not in the dataset" in str(s)
    # the toolkit's ResNet50 has 76.1% top-1 accuracy
    assert 0.75 < s.imagenet_agreement < 0.77

    field = val_dataset.get_field("resnet50")
    assert field.document_type is fo.Classification
    assert val_dataset.has_field("resnet50.class_index")

    names = class_table().labels
    paths, labels, indices, confs = val_dataset.values(
        ["filepath", "resnet50.label", "resnet50.class_index",
         "resnet50.confidence"])
    by_name = {os.path.basename(p): (lab, k, c)
               for p, lab, k, c in zip(paths, labels, indices, confs)}
    for extra in EXTRAS:
        assert by_name[os.path.basename(extra)] == (None, None, None)
    for file_name, (klass, prob) in resnet_rows.items():
        if file_name in by_name:
            assert by_name[file_name] == (names[klass], klass, prob)
    # a few spelled out
    assert by_name["ILSVRC2012_val_00000293.JPEG"] == (
        names[394], 394, 0.5530332327)
    sample = val_dataset.one(
        fo.ViewField("filepath") == "/data/val/ILSVRC2012_val_00000001.JPEG")
    assert isinstance(sample.resnet50, fo.Classification)
    assert sample.resnet50.label == names[sample.resnet50.class_index]


@needs_csv
def test_pickle_of_the_same_predictions_imports_the_same_classes(
    val_dataset, resnet_rows, tmp_path
):
    order = _val_order("toolkit")  # the rows of the toolkit's pickles
    classes = [resnet_rows[n][0] for n in order]
    probs = [resnet_rows[n][1] for n in order]
    path = tmp_path / "resnet50_testbed.pickle"
    with open(path, "wb") as f:
        pickle.dump({"model": "resnet50-testbed",
                     "logits": _logits_like(classes, probs)}, f)

    s = import_predictions(val_dataset, path, "from_pickle")
    assert (s.format, s.model, s.samples_written) == (
        "pickle", "resnet50-testbed", 50000 - LEFT_OUT)
    assert s.rows_not_in_dataset == LEFT_OUT
    csv_idx, pkl_idx, csv_conf, pkl_conf = val_dataset.values(
        ["resnet50.class_index", "from_pickle.class_index",
         "resnet50.confidence", "from_pickle.confidence"])
    assert csv_idx == pkl_idx
    ok = [i for i, c in enumerate(csv_conf) if c is not None]
    assert np.allclose(np.array(csv_conf)[ok].astype(float),
                       np.array(pkl_conf)[ok].astype(float), atol=1e-5)

    # the same logits in file-number order read the same with row_order="val"
    numbers = np.array([int(n[15:23]) for n in order])
    val_path = tmp_path / "val_order.pkl"
    val_logits = np.empty((len(order), 1000), np.float16)  # argmax survives
    val_logits[numbers - 1] = _logits_like(classes, probs)
    with open(val_path, "wb") as f:
        pickle.dump({"model": "m", "logits": val_logits}, f)
    got = read_predictions(val_path, row_order="val")
    mapping = dict(zip(got.file_names, got.class_index.tolist()))
    assert mapping == {n: c for n, (c, _) in resnet_rows.items()}


def test_existing_classification_needs_overwrite_then_is_replaced(tmp_path):
    ds = _small_dataset("pred-overwrite")
    first = _write_csv(tmp_path / "a.csv", [[f, 7, 0.5] for f in SMALL_FILES])
    second = _write_csv(tmp_path / "b.csv",
                        [[f"/any/dir/{SMALL_FILES[0]}", 999, 0.25]])
    s = import_predictions(ds.name, first, "model_a")
    assert s.samples_written == 4 and s.samples_without_row == 1

    with pytest.raises(ImageNetXError, match="`overwrite=True`"):
        import_predictions(ds, second, "model_a")
    assert ds.values("model_a.class_index") == [7, 7, 7, 7, None]
    ds.evaluate_classifications("model_a", gt_field="model_a",
                                eval_key="eval_model_a")

    s = import_predictions(ds, second, "model_a", overwrite=True)
    assert s.replaced and s.cleared == 3 and s.samples_written == 1
    # the evaluation scored the old predictions: it is gone
    assert not ds.has_evaluation("eval_model_a")
    names = class_table().labels
    assert ds.values("model_a.label") == [names[999], None, None, None, None]
    assert ds.values("model_a.confidence")[0] == 0.25


def test_pickle_with_file_names(tmp_path):
    ds = _small_dataset("pred-file-names")
    logits = np.zeros((2, 1000), np.float64)
    logits[0, 3] = logits[1, 500] = 5.0
    path = tmp_path / "two.pickle"
    with open(path, "wb") as f:
        # protocol 2, as older numpy/Python pickles are
        pickle.dump({"model": "two", "logits": logits,
                     "file_names": [SMALL_FILES[1], "elsewhere.JPEG"]}, f,
                    protocol=2)
    s = import_predictions(ds, path, "two")
    assert (s.samples_written, s.rows_not_in_dataset) == (1, 1)
    assert ds.values("two.class_index") == [None, 3, None, None, None]
    conf = ds.values("two.confidence")[1]
    assert conf == pytest.approx(np.exp(5) / (np.exp(5) + 999))


# ---------------------------------------------------------- command line

CLI_DATASET = "pred-cli"


def _bad_pickle(path, logits=None, data=None):
    with open(path, "wb") as f:
        pickle.dump(data if data is not None else {"model": "m",
                                                   "logits": logits}, f)
    return path


class _Code:
    def __reduce__(self):  # would run code while unpickling
        return (os.system, ("echo owned",))


def _bad_inputs(folder):
    """{case: (argv tail, text expected in the message)}."""
    rows = [[f, 1, 0.9] for f in SMALL_FILES]
    f = folder
    (f / "garbage.csv").write_bytes(b"\xff\xfe\x00\x81 not text \x00\x9f")
    return {
        "wrong-columns": (
            ["--file", str(_write_csv(f / "cols.csv", rows,
                                      ("file", "cls", "prob")))],
            "lacks the column(s) file_name, predicted_class"),
        "wrong-shape": (
            ["--file", str(_bad_pickle(f / "shape.pickle",
                                       np.zeros((50000, 10), np.float32)))],
            "shape (50000, 10)"),
        "wrong-rows": (
            ["--file", str(_bad_pickle(f / "rows.pickle",
                                       np.zeros((7, 1000), np.float32)))],
            "7 logits rows"),
        "class-1000": (
            ["--file", str(_write_csv(f / "c1000.csv",
                                      rows[:2] + [[SMALL_FILES[2], 1000, .5]]))],
            "outside 0-999 (first: 1000 on line 4)"),
        "class-minus-1": (
            ["--file", str(_write_csv(f / "cm1.csv", [[SMALL_FILES[0], -1, .5]]))],
            "outside 0-999 (first: -1 on line 2)"),
        "non-numeric": (
            ["--file", str(_write_csv(f / "nan.csv",
                                      rows[:1] + [[SMALL_FILES[1], "tench", .5]]))],
            "non-numeric predicted_class 'tench' on line 3"),
        "probability": (
            ["--file", str(_write_csv(f / "p.csv", [[SMALL_FILES[1], 3, 1.5]]))],
            "predicted_probability value(s) outside [0, 1]"),
        "missing-file": (
            ["--file", str(f / "no-such.csv")], "does not exist"),
        "unreadable": (
            ["--file", str(f / "garbage.csv")], "Cannot read prediction file"),
        "folder": (["--file", str(f)], "is a folder"),
        "not-a-dict": (
            ["--file", str(_bad_pickle(f / "list.pickle", data=[1, 2]))],
            "holds a list, no 'logits'"),
        "code-in-pickle": (
            ["--file", str(_bad_pickle(f / "code.pickle",
                                       data={"logits": _Code()}))],
            "references posix.system"),
        "non-classification-field": (
            ["--file", str(_write_csv(f / "ok.csv", rows)), "--field",
             "score"],
            "Field 'score' of dataset 'pred-cli' is a FloatField"),
        "ground-truth-field": (
            ["--file", str(_write_csv(f / "ok.csv", rows)), "--field",
             "ground_truth"],
            "'ground_truth' is the ground truth field"),
        "matches-nothing": (
            ["--file", str(_write_csv(f / "other.csv", [
                [f"ILSVRC2012_val_{49990 + k:08d}.JPEG", 1, 0.9] for k in range(5)]))],
            "None of the 5 file names in"),
    }


BAD_CASES = [
    "wrong-columns", "wrong-shape", "wrong-rows", "class-1000",
    "class-minus-1", "non-numeric", "probability", "missing-file",
    "unreadable", "folder", "not-a-dict", "code-in-pickle",
    "non-classification-field", "ground-truth-field", "matches-nothing",
]


def _snapshot(name):
    ds = fo.load_dataset(name)
    return (sorted(ds.get_field_schema(flat=True)),
            list(ds._sample_collection.find({}, sort=[("_id", 1)])))


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory):
    """Runs every bad input and one good import concurrently (each is a
    separate `imagenetx` process); returns their results and the dataset
    before and after."""
    ds = _small_dataset(CLI_DATASET)
    ds.set_values("score", [0.1] * len(ds))
    folder = tmp_path_factory.mktemp("bad-inputs")
    cases = _bad_inputs(folder)
    assert sorted(cases) == sorted(BAD_CASES)
    good = _small_dataset("pred-cli-good")
    before = _snapshot(CLI_DATASET)

    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = {}
    for case, (argv, _) in cases.items():
        args = ["--dataset", CLI_DATASET, "--field", "preds"] + argv
        procs[case] = _start(env, args)
    procs["good"] = _start(env, ["--dataset", good.name, "--file",
                                 str(folder / "ok.csv"), "--field", "preds"])
    results = {case: _finish(p) for case, p in procs.items()}
    return cases, results, before, _snapshot(CLI_DATASET), good


def _start(env, args):
    return subprocess.Popen(
        [sys.executable, "-m", "imagenetx", "import-predictions", *args],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc):
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(cli_runs, case):
    cases, results, before, after, _ = cli_runs
    code, out, err = results[case]
    _, expected = cases[case]
    assert code == 2, (out, err)
    assert expected in err, err
    assert "Traceback" not in err and "owned" not in out
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("imagenetx import-predictions: error: ")
    if case not in ("missing-file", "folder", "non-classification-field",
                    "ground-truth-field"):
        assert str(cases[case][0][1]) in err  # names the file
    assert after == before  # nothing written, no field declared


def test_command_prints_the_summary(cli_runs):
    _, results, _, _, good = cli_runs
    code, out, err = results["good"]
    assert code == 0, err
    assert "4 of 5 samples written" in out
    assert "0 rows for files not in the dataset" in out
    good.reload()
    assert good.values("preds.class_index") == [1, 1, 1, 1, None]


# ------------------------------------------------------------------ operator


def test_operator_imports_predictions(tmp_path):
    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    operator = f"{PLUGIN_NAME}/import_predictions"
    assert foo.operator_exists(operator)
    ds = _small_dataset("pred-operator")
    path = _write_csv(tmp_path / "op.csv", [[f, 2, 0.75] for f in SMALL_FILES[:3]])

    result = foo.execute_operator(operator, ctx={
        "dataset": ds.name,
        "params": {"path": str(path), "field": "op_preds"},
    })
    assert result.error is None, result.error
    assert result.result["samples_written"] == 3
    assert result.result["samples_without_row"] == 2
    ds.reload()
    assert ds.values("op_preds.class_index") == [2, 2, 2, None, None]

    # again without overwrite: the form refuses it before Execute
    with pytest.raises(Exception, match="Validation error"):
        foo.execute_operator(operator, ctx={
            "dataset": ds.name,
            "params": {"path": str(path), "field": "op_preds"},
        })
    assert ds.values("op_preds.class_index") == [2, 2, 2, None, None]

    result = foo.execute_operator(operator, ctx={
        "dataset": ds.name,
        "params": {"path": str(path), "field": "op_preds", "overwrite": True},
    })
    assert result.error is None, result.error
    assert result.result["samples_written"] == 3
