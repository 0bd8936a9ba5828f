"""Zero-shot models through predict: an OpenCLIP model built from a config
registered here (random weights; no weights can be downloaded here), as a
1000-way ImageNet classifier and as ImageNet-D's 113-way one, against a
reference computed directly with open_clip on the same real photos."""

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from conftest import make_dataset, open_clip_architecture, save_photo
from imagenetx.errors import ImageNetXError
from imagenetx.models.predict import predict
from imagenetx.probes.run import run_probe

open_clip = pytest.importorskip("open_clip")

ARCH = "tiny-clip-zs-test"
CONFIG = {"embed_dim": 64,
          "vision_cfg": {"image_size": 64, "layers": 2, "width": 64, "patch_size": 16},
          "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64,
                       "heads": 2, "layers": 2}}
PROMPT = "A photo of a {c}"
SEED = 0


@pytest.fixture(scope="module", autouse=True)
def _registered():
    with open_clip_architecture(ARCH, CONFIG):
        yield


def _reference(paths, names, prompt=PROMPT):
    """Logits of open_clip's own pipeline: its preprocess transform, its
    zero-shot builder, its encode_image, its logit scale."""
    torch.manual_seed(SEED)
    model, _, preprocess = open_clip.create_model_and_transforms(ARCH)
    model.eval()
    tokenizer = open_clip.get_tokenizer(ARCH)
    with torch.no_grad():
        head = open_clip.build_zero_shot_classifier(
            model, tokenizer, names, [lambda c: prompt.format(c=c)],
            num_classes_per_batch=10, device="cpu")
        x = torch.stack([preprocess(Image.open(p)) for p in paths])
        features = model.encode_image(x, normalize=True)
        return (model.logit_scale.exp() * features @ head).numpy()


def _spy_heads(monkeypatch) -> list:
    """The class counts of each call of open_clip's zero-shot head builder
    from now on (the real builder runs)."""
    calls = []
    real = open_clip.build_zero_shot_classifier

    def spy(model, tokenizer, classnames, *args, **kwargs):
        calls.append(len(classnames))
        return real(model, tokenizer, classnames, *args, **kwargs)

    monkeypatch.setattr(open_clip, "build_zero_shot_classifier", spy)
    return calls


def _predict(ds, field, **kwargs):
    torch.manual_seed(SEED)  # the same random weights as the reference
    return predict(ds, f"open_clip:{ARCH}", field, pretrained=False, num_workers=0,
                   prompt=PROMPT, **kwargs)


def test_open_clip_zero_shot_equals_open_clips_own_pipeline(photos_dir, monkeypatch):
    from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES

    from imagenetx.classes.imagenet import class_table

    ds = make_dataset("zs-imagenet", photos_dir)
    summary = _predict(ds, "clip", decoder="pil", logits=True)
    assert summary.predicted == len(ds) == 5
    paths = ds.values("filepath")
    ref = _reference(paths, list(IMAGENET_CLASSNAMES))
    ours = np.stack(ds.values("clip.logits"))
    assert np.abs(ours - ref).max() < 1e-5
    labels = class_table().labels
    assert ds.values("clip.label") == [labels[i] for i in ref.argmax(1)]
    probs = torch.from_numpy(ref).softmax(1).numpy()
    assert np.allclose(ds.values("clip.confidence"), probs.max(1), atol=1e-5)
    info = ds.get_field("clip").info["imagenetx_model"]
    assert info["source"] == "open_clip" and info["classes"] == "imagenet"
    assert info["templates"] == "prompt" and info["prompt"] == PROMPT
    assert info["example"] == "A photo of a tench"

    # the fast decoder reproduces the model's own preprocessing closely
    _predict(ds, "clip_tv", decoder="torchvision", logits=True)
    fast = np.stack(ds.values("clip_tv.logits"))
    assert np.abs(fast - ref).max() < 0.05 * np.abs(ref).max()

    # other prompts never add to the field: its record stays true, and the
    # refusal comes before the head's 1000 x 80 prompts are encoded
    heads = _spy_heads(monkeypatch)
    with pytest.raises(ImageNetXError, match=r"'clip' holds predictions of .*"
                                             r"\(templates, prompt, num_templates differ\)"):
        predict(ds, f"open_clip:{ARCH}", "clip", pretrained=False, num_workers=0,
                overwrite=False, limit=None)
    assert np.stack(ds.values("clip.logits")).tolist() == ours.tolist()
    assert heads == []

    # probes too: the same spec with other prompts never adds to the results
    torch.manual_seed(SEED)
    run_probe(ds, f"open_clip:{ARCH}", "clip", "spectral", levels=["clean"],
              pretrained=False, num_workers=0, prompt=PROMPT)
    assert ds.get_field("clip_spectral").info["imagenetx_probe"]["run"]["prompt"] == PROMPT
    assert heads == [1000]  # the probe's run, built once
    with pytest.raises(ImageNetXError, match=r"'clip_spectral' holds probe results of "
                                             r".* with other templates, prompt"):
        run_probe(ds, f"open_clip:{ARCH}", "clip", "spectral", levels=["low:0.1"],
                  pretrained=False, num_workers=0)
    assert heads == [1000]


@pytest.fixture(scope="module")
def imagenet_d_release(tmp_path_factory) -> Path:
    """A small ImageNet-D release folder of real photos (as PNGs)."""
    root = tmp_path_factory.mktemp("zs-imagenet-d") / "ImageNet-D"
    for k, (rel, photo) in enumerate([
            ("background/mug/1.png", "coffee"), ("texture/teddy_bear/2.png", "chelsea"),
            ("material/backpack/3.png", "astronaut"), ("background/umbrella/4.png", "rocket")]):
        path = save_photo(root / (rel + ".jpg"), photo)
        Image.open(path).save(root / rel)
        path.unlink()
    return root


def test_imagenet_d_is_scored_113_way_with_its_own_class_names(imagenet_d_release):
    """ImageNet-D's CLIP protocol: one prompt, 113 classes, its names made
    prompts as evaluate_vlm.py makes them."""
    from imagenetx.benchmarks.imagenet_d.loaders import load_imagenet_d_dir
    from imagenetx.classes.outputs import imagenet_d_outputs

    ds, _ = load_imagenet_d_dir(str(imagenet_d_release), name="zs-imagenet-d",
                                overwrite=True)
    summary = _predict(ds, "clip", decoder="pil", logits=True)
    outputs = imagenet_d_outputs()
    assert "coffee or french press" in outputs.prompt_names
    assert "t shirt" in outputs.prompt_names and "binder (closed)" in outputs.prompt_names
    ref = _reference(ds.values("filepath"), list(outputs.prompt_names))
    assert np.stack(ds.values("clip.logits")).shape == (4, 113)
    best = ref.argmax(1)
    assert ds.values("clip.label") == [outputs.labels[i] for i in best]
    assert ds.values("clip.class_index") == [outputs.indices[i] for i in best]
    # labels are ImageNet-D's own, so FiftyOne's evaluation runs on them
    truth = ds.values("ground_truth.label")
    assert summary.evaluated == 4
    assert summary.accuracy == np.mean([t == outputs.labels[i] for t, i in zip(truth, best)])
    assert ds.get_field("clip").info["imagenetx_model"]["classes"] == "imagenet_d"


@pytest.mark.parametrize("kwargs, message", [
    ({"prompt": "A photo of a cat"}, "must hold the class name as {c} exactly once"),
    ({"prompt": None, "templates": "nope"}, "`templates` 'nope' is neither openai nor simple"),
])
def test_bad_prompts_are_refused_before_anything_is_written(photos_dir, kwargs, message):
    ds = make_dataset("zs-bad", photos_dir)
    before = ds.get_field_schema()
    with pytest.raises(ImageNetXError, match=message.replace("{", r"\{").replace("}", r"\}")):
        predict(ds, f"open_clip:{ARCH}", "clip", pretrained=False, num_workers=0, **kwargs)
    assert ds.get_field_schema() == before


def test_templates_with_a_classifier_are_refused(photos_dir):
    ds = make_dataset("zs-bad-tpl", photos_dir)
    with pytest.raises(ImageNetXError, match="apply to zero-shot models"):
        predict(ds, "timm:resnet18", "r18", prompt=PROMPT, pretrained=False)
    assert not ds.has_field("r18")
