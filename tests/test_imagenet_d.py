"""ImageNet-D: the packaged class map, the release-folder loader, and Hub
copies served by the loopback Hub, checked field by field."""

import os
import shutil
from pathlib import Path

import fiftyone as fo
import numpy as np
import pytest
from PIL import Image

from conftest import HUB_PORT
from hub_server import serve_repo
from imagenetx.benchmarks.imagenet_d import loaders as d
from imagenetx.benchmarks.imagenet_x.sources import load_hub_dataset
from imagenetx.classes import imagenet_d as classes
from imagenetx.errors import ImageNetXError

#: the fixture release: path under ImageNet-D/ -> (nuisance, nuisance value)
FILES = {
    "background/alarm_clock/1.png": ("background", None),
    "background/binder_closed/17.png": ("background", None),
    "background/chair/1.png": ("background", None),
    "background/chair/2.png": ("background", None),
    "material/banana/wood_7.png": ("material", "wood"),  # a stem naming one
    "material/chair/3.png": ("material", None),
    "texture/chair/1.png": ("texture", None),
    "texture/t_shirt/5.png": ("texture", None),
}

#: the authors' class map, written out: folder -> (id, name, ImageNet-1k)
CLASSES = {
    "alarm_clock": (0, "alarm_clock", [409, 530]),
    "banana": (2, "banana", [954]),
    "binder_closed": (8, "binder_(closed)", [446]),
    "chair": (16, "chair", [423, 559, 765]),
    "t_shirt": (89, "t-shirt", [610]),
}

QUESTIONS = "image_dir\tgt_category\ttop1_pred_cate\ttop2_pred_cate\n"


def _png(path: Path, seed: int):
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 255, (16, 16, 3), np.uint8)
    Image.fromarray(pixels).save(path)


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """``<tmp>/ImageNet-D/...`` in the release layout, with questions."""
    root = tmp_path_factory.mktemp("imagenet-d-release") / "ImageNet-D"
    for seed, rel in enumerate(FILES):
        _png(root / rel, seed)
    (root / "questions").mkdir()
    for kind in classes.NUISANCES:
        rows = [f"{rel}\t{rel.split('/')[1].replace('_', ' ')}\tbucket\tbench\n"
                for rel in FILES if rel.startswith(kind)]
        (root / "questions" / f"{kind}.csv").write_text(QUESTIONS + "".join(rows))
    (root / "README.md").write_text("ImageNet-D\n")
    return root


def _expected(rel: str) -> dict:
    kind, value = FILES[rel]
    index, name, indices = CLASSES[rel.split("/")[1]]
    return {"label": name, "class_index": index, "imagenet_indices": indices,
            "class_dir": rel.split("/")[1], "nuisance": kind,
            "nuisance_value": value}


def _actual(ds) -> dict:
    """The contract fields of every sample, keyed as in FILES
    (``<nuisance>/<class_dir>/<file name>``)."""
    rows = zip(ds.values("filepath"), ds.values("ground_truth"),
               ds.values("nuisance"), ds.values("nuisance_value"))
    out = {}
    for path, gt, kind, value in rows:
        assert type(gt) is fo.Classification
        key = f"{kind}/{gt.class_dir}/{os.path.basename(path)}"
        out[key] = {"label": gt.label, "class_index": gt.class_index,
                    "imagenet_indices": gt.imagenet_indices,
                    "class_dir": gt.class_dir, "nuisance": kind,
                    "nuisance_value": value}
    assert len(out) == len(ds)
    return out


def _check_contract(ds, files=FILES):
    assert _actual(ds) == {rel: _expected(rel) for rel in files}
    info = dict(ds.info["imagenetx"])
    pulled = info.pop("pulled_from", None)  # a Hub copy records the commit it came from
    assert info == {"benchmark": "imagenet_d"}
    assert pulled is None or len(pulled["revision"]) == 40
    assert ds.get_field("nuisance").__class__ is fo.StringField
    assert isinstance(ds.get_field("ground_truth.imagenet_indices"), fo.ListField)
    assert ds.persistent


# -- the packaged class map --------------------------------------------------


def test_class_map_is_the_authors():
    table = classes.imagenet_d_classes()
    assert len(table) == 113 and [c.index for c in table] == list(range(113))
    for folder, (index, name, indices) in CLASSES.items():
        c = classes.class_by_folder()[folder]
        assert (c.index, c.name, list(c.imagenet_indices)) == (index, name, indices)
    assert sum(len(c.imagenet_indices) > 1 for c in table) == 9
    assert [len(classes.nuisance_vocabulary(k)) for k in classes.NUISANCES] == [468, 47, 32]
    assert classes.find_class("Coffee/French press").folder == "coffee_or_french_press"
    assert classes.find_class("alarm clock").folder == "alarm_clock"
    assert classes.find_class("sofa") is None
    assert classes.find_nuisance_value("street", "background") == "street-s"
    assert classes.find_nuisance_value("plastic_clear", "material") == "plastic-clear"


# -- the release folder ------------------------------------------------------


def test_release_folder(release):
    ds, s = d.load_imagenet_d_dir(str(release), name="imd-dir")
    _check_contract(ds)
    assert s.by_nuisance == {"background": 4, "texture": 2, "material": 2}
    assert (s.samples, s.classes, s.nuisance_values) == (8, 5, 1)
    assert s.missing_nuisances == ()
    assert "8 images (4 background, 2 texture, 2 material) of 5 of 113 classes" in str(s)
    # its nuisances are a Model Evaluation scenario: custom code, as ImageNet-D
    # counts only images with a nuisance
    from imagenetx.store.scenarios import read_scenarios

    scenarios = {x["name"]: x for x in read_scenarios(ds).values()}
    nuisance = scenarios["ImageNet-D: nuisance"]
    assert nuisance["type"] == "custom_code"
    subsets = {}
    exec(nuisance["subsets"], {}, subsets)  # as the native panel reads it
    assert list(subsets["subsets"]) == ["background", "texture", "material"]

    # the folder that holds ImageNet-D/ works too
    ds, _ = d.load_imagenet_d_dir(str(release.parent), name="imd-dir",
                                  overwrite=True)
    _check_contract(ds)


def test_missing_nuisance_folder_is_reported(release, tmp_path):
    root = tmp_path / "ImageNet-D"
    shutil.copytree(release, root, ignore=lambda folder, names: (
        ["texture"] if Path(folder) == release else []))
    ds, s = d.load_imagenet_d_dir(str(root), name="imd-no-texture")
    _check_contract(ds, [f for f in FILES if not f.startswith("texture")])
    assert s.missing_nuisances == ("texture",)
    assert "no texture/ folder, so no texture images" in str(s)


def test_bad_folders_write_nothing(release, tmp_path):
    with pytest.raises(ImageNetXError, match="does not exist"):
        d.load_imagenet_d_dir(str(tmp_path / "missing"), name="imd-bad")

    _png(tmp_path / "plain" / "cat.png", 0)
    with pytest.raises(ImageNetXError, match="none of the ImageNet-D release "
                       "folders background/, texture/, material/"):
        d.load_imagenet_d_dir(str(tmp_path / "plain"), name="imd-bad")

    with pytest.raises(ImageNetXError, match="looks like one nuisance subset"):
        d.load_imagenet_d_dir(str(release / "background"), name="imd-bad")

    odd = tmp_path / "odd"
    shutil.copytree(release, odd)
    _png(odd / "background" / "sofa" / "1.png", 1)
    _png(odd / "texture" / "Chair" / "1.png", 2)
    with pytest.raises(ImageNetXError) as e:
        d.load_imagenet_d_dir(str(odd), name="imd-bad")
    assert "2 class folders that are not ImageNet-D classes " \
           "(background/sofa, texture/Chair)" in str(e.value)
    assert "ImageNet-D/{background,texture,material}/<class folder>" in str(e.value)

    empty = tmp_path / "empty"
    (empty / "material" / "chair").mkdir(parents=True)
    with pytest.raises(ImageNetXError, match="no images"):
        d.load_imagenet_d_dir(str(empty), name="imd-bad")
    assert not fo.dataset_exists("imd-bad")

    d.load_imagenet_d_dir(str(release), name="imd-exists")
    with pytest.raises(ImageNetXError, match="`overwrite=True`"):
        d.load_imagenet_d_dir(str(release), name="imd-exists")
    assert len(fo.load_dataset("imd-exists")) == len(FILES)


def test_command_line(release, capsys):
    from imagenetx.cli import main

    assert main(["load", "imagenet-d", "--dir", str(release), "--name", "imd-cli"]) == 0
    out = capsys.readouterr().out
    assert "ImageNet-D dataset 'imd-cli'" in out
    assert "4 background, 2 texture, 2 material" in out
    _check_contract(fo.load_dataset("imd-cli"))

    assert main(["load", "imagenet-d", "--dir", str(release / "nope")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "does not exist" in err
    assert main(["load", "imagenet-d", "--dir", str(release), "--max-samples", "2"]) == 2
    err = capsys.readouterr().err
    assert "applies to ImageNet-D's source" in err and "hub" in err, err


def test_the_benchmark_loads_its_release_folder(release):
    from imagenetx.benchmarks.imagenet_d.benchmark import ImageNetD

    ds, summary = ImageNetD().load(dir=str(release), name="imd-benchmark")
    assert summary.samples == len(FILES)
    _check_contract(ds)
    # an option of another source: one line naming it, nothing built
    with pytest.raises(ImageNetXError, match="`max_samples` applies to ImageNet-D's "
                                             "source `hub`, not to `dir`"):
        ImageNetD().load(dir=str(release), max_samples=2, name="imd-benchmark-bad")
    assert not fo.dataset_exists("imd-benchmark-bad")


def test_operator(release):
    import fiftyone.operators as foo

    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    result = foo.execute_operator(
        f"{PLUGIN_NAME}/load_benchmark",
        ctx={"params": {"benchmark": "imagenet_d", "source": "dir", "dir": str(release),
                        "name": "imd-op"}},
    )
    assert result.error is None, result.error
    assert len(fo.load_dataset("imd-op")) == len(FILES)
    _check_contract(fo.load_dataset("imd-op"))


# -- copies on the Hub -------------------------------------------------------


def _directory_tree(release: Path, name: str) -> fo.Dataset:
    """What ``fo.Dataset.from_dir(..., ImageClassificationDirectoryTree)``
    makes of the release: every file a sample labelled with its top folder
    (so ``questions/*.csv`` too, whose label gives the default class
    ``questions``). FiftyOne 1.x refuses the csv files' media type, so they
    are added as FiftyOne 0.24 plausibly did: as image samples."""
    ds = fo.Dataset(name)
    files = sorted(p for p in release.rglob("*") if p.is_file()
                   and p.relative_to(release).parts[0] in
                   ("background", "material", "questions", "texture"))
    ds.add_samples([
        fo.Sample(filepath=str(p), media_type="image",
                  ground_truth=fo.Classification(
                      label=p.relative_to(release).parts[0]))
        for p in files
    ])
    ds.default_classes = ["background", "material", "questions", "texture"]
    return ds


def _hub_export(tmp_path_factory, release, keep_paths: bool) -> str:
    export = tmp_path_factory.mktemp("imd-export")
    src = _directory_tree(release, f"imd-src-{keep_paths}")
    kwargs = {"rel_dir": str(release)} if keep_paths else {}
    src.export(str(export), dataset_type=fo.types.FiftyOneDataset,
               export_media=True, **kwargs)
    src.delete()
    (export / "fiftyone.yml").write_text(
        "format: FiftyOneDataset\nname: ImageNet-D\ntags: []\n")
    return str(export)


@pytest.fixture(scope="module")
def hub_copies(tmp_path_factory, release):
    """FiftyOne exports whose ground truth is the nuisance: one keeps the
    release paths (``data/background/chair/1.png``), served under an
    ImageNet-D name and a neutral one; one has only file names, as a plain
    export makes them (``data/1-2.png``); and the release as a plain repo."""
    with_paths = _hub_export(tmp_path_factory, release, keep_paths=True)
    flat = _hub_export(tmp_path_factory, release, keep_paths=False)
    servers = [
        serve_repo(HUB_PORT, "test-org/ImageNet-D", with_paths),
        serve_repo(HUB_PORT, "test-org/diffusion-objects", with_paths),
        serve_repo(HUB_PORT, "test-org/ImageNet-D-flat", flat),
        serve_repo(HUB_PORT, "zcs15/ImageNet-D", str(release)),
    ]
    yield
    for server in servers:
        server.shutdown()


@pytest.mark.parametrize("repo", ["test-org/ImageNet-D", "test-org/diffusion-objects"],
                         ids=["by-name", "by-schema"])
def test_hub_copy_with_the_class_in_the_path(hub_copies, repo):
    ds, s = load_hub_dataset(repo, name=f"imd-{repo.split('/')[1]}")
    _check_contract(ds)
    assert s.removed == 3  # the three questions tables
    assert "removed 3 non-image samples" in str(s)
    assert s.class_source == "file paths"
    assert ds.default_classes == []
    assert f"the Hub repo '{repo}'" in str(s)


def test_hub_copy_without_the_class_is_refused(hub_copies):
    with pytest.raises(ImageNetXError) as e:
        load_hub_dataset("test-org/ImageNet-D-flat", name="imd-flat")
    message = str(e.value)
    assert "does not say which of the 113 ImageNet-D object classes 8 of its " \
           "8 images show" in message
    assert "ImageNet-D from `dir=...`" in message
    assert "zcs15/ImageNet-D" in message
    assert not fo.dataset_exists("imd-flat")


def test_authors_plain_repo(hub_copies):
    ds, s = load_hub_dataset("zcs15/ImageNet-D", name="imd-zcs15")
    _check_contract(ds)
    assert "the Hub repo 'zcs15/ImageNet-D'" in str(s)

    ds, s = load_hub_dataset("zcs15/ImageNet-D", name="imd-zcs15-3",
                             max_samples=3)
    _check_contract(ds, sorted(FILES)[:3])
    assert s.by_nuisance == {"background": 3} and s.missing_nuisances == ()


def test_from_hub_dataset_reads_tags_and_file_names(tmp_path):
    """A copy with the nuisance as a tag and the class in the file name."""
    ds = fo.Dataset("imd-names")
    samples = []
    for i, (stem, tag) in enumerate([("chair_12", "texture"),
                                     ("alarm_clock_bedroom-s_3", "background")]):
        _png(tmp_path / f"{stem}.png", i)
        samples.append(fo.Sample(filepath=str(tmp_path / f"{stem}.png"), tags=[tag]))
    ds.add_samples(samples)
    s = d.from_hub_dataset(ds)
    assert s.class_source == "file paths" and s.nuisance_values == 1
    assert sorted(zip(ds.values("ground_truth.class_dir"), ds.values("nuisance"),
                      ds.values("nuisance_value"))) == [
        ("alarm_clock", "background", "bedroom-s"), ("chair", "texture", None)]
    # converting again changes nothing
    before = ds.values("ground_truth.class_index")
    d.from_hub_dataset(ds)
    assert ds.values("ground_truth.class_index") == before


def test_repo_names():
    assert d.is_imagenet_d_repo("Voxel51/ImageNet-D")
    assert d.is_imagenet_d_repo("org/imagenet_d-mini")
    assert not d.is_imagenet_d_repo("org/ImageNet-Dogs")
    assert not d.is_imagenet_d_repo("Voxel51/ImageNet-A")


# -- scores on the slice engine ---------------------------------------------

#: a model's top-1 ImageNet-1k index per fixture image, and whether it is
#: right by hand: right when it is any index of the image's class
PREDICTED = {
    "background/alarm_clock/1.png": (530, True),     # 409 or 530
    "background/binder_closed/17.png": (1, False),
    "background/chair/1.png": (765, True),           # 423, 559 or 765
    "background/chair/2.png": (424, False),
    "material/banana/wood_7.png": (954, True),
    "material/chair/3.png": (559, True),
    "texture/chair/1.png": (0, False),
    "texture/t_shirt/5.png": (610, True),
}


@pytest.fixture(scope="module")
def scored(release):
    from imagenetx.store.classifications import write_classifications

    ds, _ = d.load_imagenet_d_dir(str(release), name="imd-scores", overwrite=True)
    keys = [f"{k}/{gt.class_dir}/{os.path.basename(p)}" for p, gt, k in zip(
        ds.values("filepath"), ds.values("ground_truth"), ds.values("nuisance"))]
    write_classifications(ds, "m", ds.values("id"), [PREDICTED[k][0] for k in keys],
                          confidence=[0.5] * len(keys))
    return ds


def test_scores_per_nuisance_equal_a_hand_computation(scored):
    from imagenetx.analysis import compute_ratios

    r = compute_ratios(scored, "m", intervals=False).to_dict()
    assert (r["benchmark"], r["slicing"], r["correct"]) == ("imagenet_d", "nuisance", "class")
    m = r["models"]["m"]
    # 5 of 8 right; background 2/4, material 2/2, texture 1/2
    assert (m["n"], m["correct"], m["accuracy"]) == (8, 5, 5 / 8)
    by_hand = {"background": (4, 2), "material": (2, 2), "texture": (2, 1)}
    for kind, (n, right) in by_hand.items():
        e = m["slices"][kind]
        assert (e["n"], e["correct"]) == (n, right)
        assert e["error_ratio"] == pytest.approx((1 - right / n) / (1 - 5 / 8), abs=1e-12)
        assert e["few_images"] is True
    assert m["worst_slice"] == "background"
    assert "factors" not in m  # the ImageNet-X alias only on its factors

    # the specific nuisance value, where the data names it, and the class
    values = compute_ratios(scored, "m", slicing="nuisance_value",
                            intervals=False).to_dict()["models"]["m"]["slices"]
    assert values == {"wood": values["wood"]} and values["wood"]["n"] == 1
    chair = compute_ratios(scored, "m", slicing="class", intervals=False
                           ).to_dict()["models"]["m"]["slices"]["chair"]
    assert (chair["n"], chair["correct"]) == (4, 2)


def test_mistakes_of_a_nuisance_are_the_wrong_images(scored):
    from imagenetx.analysis import mistakes_view

    view = mistakes_view(scored, "m", "background")
    assert sorted(f"{gt.class_dir}/{os.path.basename(p)}" for p, gt in zip(
        view.values("filepath"), view.values("ground_truth"))) == [
        "binder_closed/17.png", "chair/2.png"]
    assert len(mistakes_view(scored, "m")) == 3
    with pytest.raises(ImageNetXError, match="Unknown nuisance 'weather'"):
        mistakes_view(scored, "m", "weather")


def test_ratios_command_and_bad_input_on_imagenet_d(scored, capsys):
    import json

    from imagenetx.cli import main

    assert main(["ratios", "--dataset", "imd-scores", "--pred-field", "m",
                 "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["slices"] == ["background", "texture", "material"]
    assert r["models"]["m"]["slices"]["material"]["accuracy"] == 1.0
    assert main(["ratios", "--dataset", "imd-scores", "--pred-field", "m"]) == 0
    out = capsys.readouterr().out
    assert "nuisance" in out and "background" in out

    for args, message in (
        (["--correct", "metaclass"],
         "Unknown correctness 'metaclass' for ImageNet-D: use one of class"),
        (["--slicing", "weather"], "Unknown slicing 'weather'"),
        (["--slicing", "ground_truth"], "not a categorical field"),
    ):
        before = scored.count_values("nuisance")
        assert main(["ratios", "--dataset", "imd-scores", "--pred-field", "m",
                     *args]) == 2
        err = capsys.readouterr().err
        assert message in err and err.strip().count("\n") == 0
        assert scored.count_values("nuisance") == before


def test_outputs_that_do_not_fit_and_user_slicings(scored):
    from imagenetx.analysis import compute_ratios
    from imagenetx.store.classifications import write_classifications

    ids = scored.values("id")
    # a user's own tags slice the same engine
    scored.select(ids[:3]).tag_samples("hard")
    r = compute_ratios(scored, "m", slicing="tags", intervals=False).to_dict()
    assert r["slices"] == ["hard"] and r["models"]["m"]["slices"]["hard"]["n"] == 3
    # a 1001-class prediction does not fit the 1000-way label space
    write_classifications(scored, "m_ok", ids, [0] * len(ids))
    scored.set_values("m_ok.class_index", [1000] + [0] * (len(ids) - 1))
    with pytest.raises(ImageNetXError, match="do not fit"):
        compute_ratios(scored, "m_ok")
    scored.delete_sample_field("m_ok")

    # a user's int field: slices keyed by its text, views and filters by it too
    from imagenetx.analysis import mistakes_view
    scored.set_values("bucket", [i % 2 for i in range(len(ids))])
    r = compute_ratios(scored, "m", slicing="bucket", intervals=False).to_dict()
    assert r["slices"] == ["0", "1"]
    one = r["models"]["m"]["slices"]["1"]
    assert len(mistakes_view(scored, "m", "1", slicing="bucket")) == one["n"] - one["correct"]
    within = compute_ratios(scored, "m", within=("bucket", "1"), intervals=False).to_dict()
    assert within["models"]["m"]["n"] == one["n"]
    scored.delete_sample_field("bucket")


def test_top5_counts_an_image_once(scored):
    """ImageNet-D's top-5: right when any of the 5 best indices is one of
    the class's, once per image even when two of them are (chair: 423 and
    765 both in the top 5)."""
    from imagenetx.analysis import compute_ratios
    from imagenetx.store.classifications import write_classifications

    keys = [f"{k}/{gt.class_dir}/{os.path.basename(p)}" for p, gt, k in zip(
        scored.values("filepath"), scored.values("ground_truth"), scored.values("nuisance"))]
    top5 = {k: [PREDICTED[k][0], 1, 2, 3, 4] for k in keys}
    top5["background/chair/2.png"] = [424, 423, 765, 5, 6]   # two chair indices
    top5["texture/chair/1.png"] = [0, 7, 8, 9, 10]            # none
    write_classifications(scored, "m5", scored.values("id"),
                          [top5[k][0] for k in keys], top5=[top5[k] for k in keys])
    m = compute_ratios(scored, "m5", correct="top5", intervals=False).to_dict()["models"]["m5"]
    # top-1 had 5 right; chair/2 is now right by its top 5, binder and texture chair not
    assert (m["n"], m["correct"]) == (8, 6)
    assert m["slices"]["background"]["correct"] == 3
    with pytest.raises(ImageNetXError, match="no top5"):
        compute_ratios(scored, "m", correct="top5")
    scored.delete_sample_field("m5")


def test_report_on_imagenet_d(scored, tmp_path):
    from imagenetx.present.report import write_report

    out = tmp_path / "d.html"
    summary = write_report(scored, "m", str(out))
    page = out.read_text()
    assert "ImageNet-D: why the models fail" in page
    assert "Error ratio per nuisance" in page and "Figure 8" not in page
    import csv
    with open(tmp_path / "d_error_ratios.csv") as f:
        rows = {r["slice"]: r for r in csv.DictReader(f)}
    assert float(rows["texture"]["accuracy"]) == 0.5 and len(summary.csvs) == 5


def test_panel_on_imagenet_d_clicks_through_to_a_nuisance(scored):
    """The same panel on ImageNet-D: bars per nuisance, a click shows that
    nuisance's mistakes."""
    import fiftyone.server.view as fosv

    from imagenetx.app.install import install_plugin
    from test_panel import PanelSession

    install_plugin()
    panel = PanelSession("imd-scores")
    requests = panel.send("on_load")
    assert panel.state["status"] == "ok", panel.state.get("message")
    assert panel.state["controls"]["slicing"] == "nuisance"
    traces = panel.data(requests)["chart"]
    trace = next(t for t in traces if t["name"] == "m")
    ratios = dict(zip(trace["x"], trace["y"]))
    assert ratios["material"] == 0.0
    assert ratios["background"] == pytest.approx(4 / 3)
    panel.send("on_click_bar", trace="m", x="background")
    shown = fosv.get_view("imd-scores", stages=panel.view_stages)
    assert len(shown) == 2 == panel.state["drill"]["count"]
    assert set(shown.distinct("nuisance")) == {"background"}
