"""``hf:ORG/NAME`` or ``hf:/path/to/saved_model``: a Hugging Face
transformers model, from the Hub or a folder saved with ``save_pretrained``.

Two kinds, told apart by the model's config:

-   an image classifier (``AutoModelForImageClassification``) whose
    ``id2label`` is ImageNet-1k, e.g. ``hf:google/vit-base-patch16-224``
    or ``hf:microsoft/resnet-50``: its outputs are mapped to our class
    indices (:mod:`imagenetx.models.sources._labels`), its preprocessing is
    its image processor's resize, center crop, mean and std
-   a CLIP or SigLIP model (config ``model_type`` ``clip`` / ``siglip``),
    e.g. ``hf:openai/clip-vit-base-patch32``: a zero-shot head over the
    requested classes and templates, built as open_clip's builder does
    (each class's prompts encoded with ``get_text_features``, normalized,
    averaged, normalized again) and cached on disk; the logits are
    ``logit_scale.exp()`` times the cosine similarities (plus SigLIP's
    ``logit_bias``; SigLIP is scored with the sigmoid, as its authors do)

``pretrained=False`` builds the model from its config with random weights.
"""

# lazy imports: start-up (a spec is checked without importing torch or the model's library)

from __future__ import annotations

import functools
import os
from typing import List, Optional

from imagenetx.errors import ImageNetXError
from imagenetx.models.sources._common import first_line, whole_message
from imagenetx.models.sources._network import (
    hub_cache,
    hub_name,
    hub_unreachable,
    missing_weights,
    quiet_hub,
)

SYNTAX = "hf:ORG/NAME or hf:/path/to/saved_model"
ZERO_SHOT = True

#: config model types loaded as zero-shot classifiers
ZERO_SHOT_TYPES = ("clip", "siglip")

#: PIL resampling codes (what image processors store) -> torchvision's
_RESAMPLE = {0: "NEAREST", 1: "LANCZOS", 2: "BILINEAR", 3: "BICUBIC", 4: "BOX",
             5: "HAMMING"}

_FIX = ("connect to the internet (and unset HF_HUB_OFFLINE), check the id on "
        "huggingface.co, or pass a folder saved with save_pretrained as "
        "hf:/path/to/saved_model")


#: the fix for a local folder whose weights do not load (nothing to download)
_LOCAL_FIX = ("save the model there again with model.save_pretrained(path), which writes "
              "safetensors weights, or pass a Hub id hf:ORG/NAME")


def is_local(rest: str) -> bool:
    """Whether ``rest`` names a local folder rather than a Hub id."""
    return rest.startswith(("/", ".", "~")) or os.path.isdir(os.path.expanduser(rest))


def parse(rest: str, request) -> None:
    if is_local(rest):
        return
    parts = rest.split("/")
    if len(parts) > 2 or not all(parts) or any(c.isspace() for c in rest):
        raise ImageNetXError(
            f"Model spec 'hf:{rest}' is not {SYNTAX}: e.g. "
            "hf:google/vit-base-patch16-224")


def load(rest: str, request):
    source = os.path.expanduser(rest) if is_local(rest) else rest
    # an unreachable Hub: cached files only, at once, no retries on the screen
    with quiet_hub(offline=not is_local(rest) and hub_unreachable() is not None):
        return _load(source, rest, request)


def _load(source: str, rest: str, request):
    config = hub_config(source, f"hf:{rest}")
    # a CLIP / SigLIP fine-tuned as a classifier has the same model type
    classifier = any(a.endswith("ForImageClassification")
                     for a in (getattr(config, "architectures", None) or ()))
    if config.model_type in ZERO_SHOT_TYPES and not classifier:
        return zero_shot_classifier(source, config, f"hf:{rest}", request)
    if request.zero_shot_options:
        raise ImageNetXError(
            f"`templates` and `prompt` apply to zero-shot models, and 'hf:{rest}' is "
            f"a {config.model_type} classifier: leave them out, or pass a CLIP or "
            "SigLIP model")
    return image_classifier(source, config, f"hf:{rest}", request)


def hub_config(source: str, spec: str):
    """The model's transformers config.

    A Hub id is first looked up in the local cache, then checked with one
    quick request, so an unreachable Hub fails at once rather than after
    huggingface_hub's retries.

    Raises:
        ImageNetXError: for a missing folder, an unknown or unreachable id
    """
    from transformers import AutoConfig

    if is_local(source):
        if not os.path.isfile(os.path.join(source, "config.json")):
            raise ImageNetXError(
                f"Model spec '{spec}': '{source}' is not a folder saved with "
                "save_pretrained (no config.json): save the model there with "
                "model.save_pretrained(path), or pass a Hub id hf:ORG/NAME")
    else:
        try:
            return AutoConfig.from_pretrained(source, local_files_only=True)
        except Exception:  # not cached: ask the Hub
            _check_reachable(source, spec)
    try:
        return AutoConfig.from_pretrained(source)
    except Exception as e:  # hub, cache and parse errors, in many types
        raise ImageNetXError(
            f"Cannot load the config of Hugging Face model '{spec}' "
            f"({type(e).__name__}: {first_line(e)}): {_FIX}") from e


def _check_reachable(repo: str, spec: str) -> None:
    """Raises ImageNetXError unless the Hub serves ``repo``'s config.json."""
    from huggingface_hub import constants
    from huggingface_hub.utils import build_hf_headers, get_session

    reason = hub_unreachable()
    if reason is not None:
        raise _missing(spec, repo, reason)
    url = f"{constants.ENDPOINT}/{repo}/resolve/main/config.json"
    try:
        response = get_session().head(url, headers=build_hf_headers(), timeout=10,
                                      follow_redirects=False)
    except Exception as e:  # connection errors, in the HTTP client's types
        raise ImageNetXError(
            f"Cannot reach the Hugging Face Hub for model '{spec}' "
            f"({type(e).__name__}: {first_line(e)}): {_FIX}") from None
    if response.status_code in (401, 403):
        raise ImageNetXError(
            f"Hugging Face model '{spec}' is gated or private (HTTP "
            f"{response.status_code}): accept its terms on huggingface.co and log in "
            "with `hf auth login`, or pass a local folder as hf:/path/to/saved_model")
    if response.status_code >= 400:
        raise ImageNetXError(
            f"Hugging Face model '{spec}' was not found (HTTP {response.status_code} "
            f"for its config.json): {_FIX}")


def _missing(spec: str, repo: str, reason: str) -> ImageNetXError:
    return missing_weights(f"Hugging Face model '{spec}'", repo, hub_cache(), hub_name(),
                           reason, "pass a folder saved with save_pretrained as "
                                   "hf:/path/to/saved_model")


def _from_pretrained(cls, source: str, config, spec: str, pretrained: bool):
    """``cls`` from its weights, or from its config with random weights."""
    try:
        if not pretrained:
            return cls.from_config(config)
        return cls.from_pretrained(source)
    except Exception as e:  # hub, cache and weight errors, in many types
        reason = None if is_local(source) else hub_unreachable()
        if reason is not None:
            raise _missing(spec, source, reason) from None
        if is_local(source):
            refused = next((line.strip().split(". ")[0] for line in str(e).splitlines()
                            if "WeightsUnpickler error" in line), None)
            why = (f"its pickled weights hold objects a safe load refuses ({refused}); "
                   "nothing of them was unpickled" if refused else
                   f"{type(e).__name__}: {whole_message(e)}")
            raise ImageNetXError(
                f"Cannot load the weights of Hugging Face model '{spec}' from its folder: "
                f"{why}: {_LOCAL_FIX}") from e
        raise ImageNetXError(
            f"Cannot load the weights of Hugging Face model '{spec}' "
            f"({type(e).__name__}: {first_line(e)}): {_FIX}") from e


def image_processor(source: str, spec: str):
    """The model's image processor."""
    from transformers import AutoImageProcessor

    try:
        return AutoImageProcessor.from_pretrained(source)
    except Exception as e:
        raise ImageNetXError(
            f"Cannot load the image processor of Hugging Face model '{spec}' "
            f"({type(e).__name__}: {first_line(e)}): save one beside the model "
            "(processor.save_pretrained(path)), or " + _FIX) from e


def image_classifier(source: str, config, spec: str, request):
    """A transformers ImageNet-1k classifier as a Classifier."""
    from transformers import AutoModelForImageClassification

    from imagenetx.classes.outputs import imagenet_outputs
    from imagenetx.models.classifier import Classifier, LogitsOf
    from imagenetx.models.sources._labels import imagenet_order, reorder_to_imagenet

    id2label = getattr(config, "id2label", None) or {}
    labels = [id2label[k] for k in sorted(id2label, key=int)]
    order = imagenet_order(labels, f"Hugging Face model '{spec}'")
    prep = preprocessing(image_processor(source, spec), spec)
    model = _from_pretrained(AutoModelForImageClassification, source, config, spec,
                             request.pretrained)
    model.eval()
    module = reorder_to_imagenet(model, order) if order else LogitsOf(model)
    return Classifier(spec, module, prep, imagenet_outputs(), "hf",
                      record={"pretrained": request.pretrained,
                              "model_type": config.model_type,
                              "reordered": order is not None})


def preprocessing(processor, spec: str):
    """The :class:`Preprocessing` of a transformers image processor: its
    resize (``shortest_edge``, or ``height`` / ``width``), center crop,
    interpolation and mean / std, as torchvision ``Resize`` then
    ``CenterCrop`` (so the pipeline's fast decoders apply). Processors with
    ``crop_pct`` (ConvNeXt) resize to ``shortest_edge / crop_pct`` first.
    A center crop's offset rounds as torchvision's (half to even) where
    transformers' floors: they can differ by one pixel.

    Raises:
        ImageNetXError: for a processor that does not rescale by 1/255, or
            has no fixed output size
    """
    import torchvision.transforms as T

    from imagenetx.models.preprocess import Preprocessing

    def get(d, key):
        if d is None:
            return None
        return d.get(key) if isinstance(d, dict) else getattr(d, key, None)

    size = getattr(processor, "size", None)
    crop = getattr(processor, "crop_size", None)
    if getattr(processor, "do_rescale", True) and abs(
            float(getattr(processor, "rescale_factor", 1 / 255)) - 1 / 255) > 1e-9:
        raise ImageNetXError(
            f"The image processor of '{spec}' rescales by "
            f"{processor.rescale_factor}, not 1/255: save the model with a processor "
            "that takes 8-bit images")
    interpolation = _interpolation(getattr(processor, "resample", 3))
    short, height, width = get(size, "shortest_edge"), get(size, "height"), get(size, "width")
    do_crop = bool(getattr(processor, "do_center_crop", False)) and get(crop, "height")
    crop_pct = getattr(processor, "crop_pct", None)
    if short and not do_crop and crop_pct:  # ConvNeXt's eval resize
        if short < 384:
            resize = T.Resize(int(short / crop_pct), interpolation, antialias=True)
        else:  # warped to a square, as ConvNeXt's processor does
            resize = T.Resize((short, short), interpolation, antialias=True)
        out = (short, short)
    elif short:
        resize = T.Resize(short, interpolation, antialias=True)
        out = (get(crop, "height"), get(crop, "width")) if do_crop else (short, short)
    elif height and width:
        resize = T.Resize((height, width), interpolation, antialias=True)
        out = (get(crop, "height"), get(crop, "width")) if do_crop else (height, width)
    else:
        raise ImageNetXError(
            f"The image processor of '{spec}' has no fixed size (size={size}): save "
            "the model with a processor whose size is shortest_edge or height/width")
    if not getattr(processor, "do_resize", True):
        raise ImageNetXError(
            f"The image processor of '{spec}' does not resize: save the model with a "
            "processor that resizes to its input size")
    normalize = getattr(processor, "do_normalize", True)
    mean = tuple(float(m) for m in processor.image_mean) if normalize else (0.0,) * 3
    std = tuple(float(s) for s in processor.image_std) if normalize else (1.0,) * 3
    return Preprocessing(geometry=T.Compose([resize, T.CenterCrop(list(out))]),
                         mean=mean, std=std, input_size=(3, int(out[0]), int(out[1])))


def _interpolation(resample):
    """A processor's ``resample`` (a PIL code, enum or torchvision mode) as a
    torchvision ``InterpolationMode``."""
    from torchvision.transforms import InterpolationMode

    if isinstance(resample, InterpolationMode):
        return resample
    try:
        return InterpolationMode[_RESAMPLE[int(resample)]]
    except (KeyError, TypeError, ValueError):
        return InterpolationMode.BICUBIC


def zero_shot_classifier(source: str, config, spec: str, request):
    """A transformers CLIP / SigLIP model as a zero-shot Classifier."""
    from transformers import AutoModel, AutoTokenizer

    model = _from_pretrained(AutoModel, source, config, spec, request.pretrained)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
    except Exception as e:  # SigLIP's tokenizer needs sentencepiece
        raise ImageNetXError(
            f"Cannot load the tokenizer of Hugging Face model '{spec}' "
            f"({type(e).__name__}: {first_line(e)}): pip install sentencepiece for "
            f"SigLIP, or {_FIX}") from e
    return classifier_from_clip(model, tokenizer, image_processor(source, spec),
                                spec, request, revision=_revision(source))


def classifier_from_clip(model, tokenizer, processor, spec: str, request,
                         revision: Optional[str] = None):
    """A zero-shot Classifier from a loaded transformers CLIP / SigLIP model.

    Args:
        model: a ``CLIPModel`` or ``SiglipModel`` (or one with
            ``get_text_features``, ``get_image_features`` and ``logit_scale``)
        tokenizer: its tokenizer
        processor: its image processor
        spec: the spec, for messages and the record
        request: the :class:`~imagenetx.models.sources.ModelRequest`
        revision (None): what identifies the weights (a commit); the head is
            cached on disk only when given and ``request.pretrained``
    """
    import torch

    from imagenetx.classes.outputs import output_classes
    from imagenetx.models.classifier import Classifier
    from imagenetx.models.zeroshot import (
        ZeroShotClassifier, cached_weights, describe, head_key, template_texts)

    model.eval()
    classes = output_classes(request.classes)
    texts = template_texts(request.templates, request.head_prompt)
    siglip = getattr(model, "logit_bias", None) is not None

    def build() -> torch.Tensor:
        return text_weights(model, tokenizer, list(classes.prompt_names), texts, siglip)

    key = ({**head_key(spec, True, classes, texts), "revision": revision}
           if revision and request.pretrained else None)

    def weights() -> torch.Tensor:  # built when the run starts
        embeddings = build() if key is None else cached_weights(key, build)
        if isinstance(getattr(model, "text_model", None), torch.nn.Module):
            # the head holds the text embeddings: the text tower stays off the device
            model.text_model = None
        return embeddings

    bias = model.logit_bias.item() if siglip else None
    head = ZeroShotClassifier(image_features_class()(model), weights,
                              model.logit_scale.exp().item(), bias)
    return Classifier(spec, head, preprocessing(processor, spec), classes, "hf",
                      record={"pretrained": request.pretrained,
                              "model_type": model.config.model_type,
                              **describe(classes, texts, request.templates, request.head_prompt)},
                      probabilities="sigmoid" if siglip else "softmax")


def text_weights(model, tokenizer, names: List[str], texts: List[str],
                 siglip: bool, batch_classes: int = 10):
    """``(D, K)`` class embeddings: each class's prompts encoded,
    normalized, averaged and normalized again (open_clip's builder).
    SigLIP's prompts are padded to its text length, as it was trained."""
    import torch
    import torch.nn.functional as F

    from imagenetx.models.classifier import logits_of

    columns = []
    with torch.no_grad():
        for start in range(0, len(names), batch_classes):
            chunk = names[start:start + batch_classes]
            prompts = [t.format(c=name) for name in chunk for t in texts]
            if siglip:
                length = model.config.text_config.max_position_embeddings
                tokens = tokenizer(prompts, padding="max_length", max_length=length,
                                   truncation=True, return_tensors="pt")
                tokens = {"input_ids": tokens["input_ids"]}
            else:
                tokens = dict(tokenizer(prompts, padding=True, truncation=True,
                                        return_tensors="pt"))
            out = model.get_text_features(**tokens)
            features = out if isinstance(out, torch.Tensor) else logits_of(out, "pooler_output")
            features = F.normalize(features.float(), dim=-1)
            features = features.view(len(chunk), len(texts), -1).mean(dim=1)
            columns.append(F.normalize(features, dim=-1))
    return torch.cat(columns).T.contiguous()


@functools.lru_cache(maxsize=None)
def image_features_class():
    """The image-features module class (defined on first use, so that
    ``parse`` imports no torch)."""
    import torch

    from imagenetx.models.classifier import logits_of

    class ImageFeatures(torch.nn.Module):
        """Normalized images -> a CLIP / SigLIP model's image features
        (``get_image_features``; transformers 5 returns them as the
        output's ``pooler_output``)."""

        def __init__(self, model: torch.nn.Module):
            super().__init__()
            self.model = model

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = self.model.get_image_features(pixel_values=x)
            return out if isinstance(out, torch.Tensor) else logits_of(out, "pooler_output")

    return ImageFeatures


def _revision(source: str) -> Optional[str]:
    """What identifies the weights: the cached Hub snapshot's commit, or a
    local folder's weight files' names, sizes and modification times (None:
    unknown, and the head is not cached)."""
    if not is_local(source):
        from huggingface_hub import try_to_load_from_cache

        path = try_to_load_from_cache(source, "config.json")
        # a snapshot path ends in snapshots/<commit>/config.json
        return os.path.basename(os.path.dirname(path)) if isinstance(path, str) else None
    stats = []
    for name in sorted(os.listdir(source)):
        if name.endswith((".safetensors", ".bin", ".pt")):
            st = os.stat(os.path.join(source, name))
            stats.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(stats) or None
