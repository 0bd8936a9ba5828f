"""``open_clip:ARCH[/PRETRAINED]``: an OpenCLIP model (CLIP, SigLIP,
EVA-CLIP, ...) as a zero-shot classifier, e.g. ``open_clip:ViT-B-16/openai``,
``open_clip:ViT-B-32/laion2b_s34b_b79k``, ``open_clip:ViT-B-16-SigLIP/webli``.

The head is open_clip's own ``build_zero_shot_classifier`` over the output
classes' prompt names and the templates (:mod:`imagenetx.models.zeroshot`);
preprocessing is the model's own ``preprocess`` transform. Without
``/PRETRAINED`` the model is built with random weights only when
``pretrained=False``; otherwise its first pretrained tag is used.
"""

# lazy imports: start-up (a spec is checked without importing torch or the model's library)

from __future__ import annotations

import functools
import os
import warnings
from typing import Optional

from imagenetx.errors import ImageNetXError
from imagenetx.models.sources._common import first_line, suggest
from imagenetx.models.sources._network import (
    hub_cache,
    hub_name,
    hub_unreachable,
    missing_weights,
    quiet_hub,
    weights_offline,
)

SYNTAX = "open_clip:ARCH[/PRETRAINED]"
ZERO_SHOT = True


def parse(rest: str, request) -> None:
    arch, _, tag = rest.partition("/")
    if not arch or "/" in tag:
        raise ImageNetXError(
            f"Model spec 'open_clip:{rest}' is not {SYNTAX}: e.g. "
            "open_clip:ViT-B-16/openai")


def load(rest: str, request):
    model, tokenizer, preprocess, spec, tag = create(rest, request)
    return zero_shot_classifier(model, tokenizer, preprocess, spec,
                                request, tag=tag if request.pretrained else None)


def create(rest: str, request) -> tuple:
    """``(model, tokenizer, preprocess, spec, tag)``: the open_clip model of
    ``ARCH[/PRETRAINED]`` with both towers, its tokenizer and eval transform,
    the spec with the tag loaded, and the tag (its first one when none is
    named and ``request.pretrained``).

    Raises:
        ImageNetXError: for an unknown architecture or tag, or weights or a
            tokenizer that cannot be fetched
    """
    import open_clip

    arch, _, tag = rest.partition("/")
    archs = open_clip.list_models()
    if arch not in archs:
        raise ImageNetXError(
            f"Unknown open_clip architecture '{arch}'{suggest(arch, archs)}: see "
            "open_clip.list_models()")
    tags = open_clip.list_pretrained_tags_by_model(arch)
    if tag and tag not in tags:
        raise ImageNetXError(
            f"Unknown pretrained tag '{tag}' of open_clip architecture '{arch}': use "
            f"one of {', '.join(tags) or 'none (no pretrained weights)'}")
    if request.pretrained and not tag:
        if not tags:
            raise ImageNetXError(
                f"open_clip architecture '{arch}' has no pretrained weights: pick "
                "one from open_clip.list_pretrained()")
        tag = tags[0]
    offline = _offline_reason(arch, tag) if request.pretrained else None
    what = f"open_clip model '{arch}/{tag}'"
    try:
        with quiet_hub(offline=offline is not None), warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            model, _, preprocess = open_clip.create_model_and_transforms(
                arch, pretrained=tag if request.pretrained else None,
                **network_options(arch, tag))
    except Exception as e:  # download and cache errors, in many types
        if offline is not None:
            raise missing_weights(what, offline[0], hub_cache(), hub_name(),
                                  offline[1]) from None
        raise ImageNetXError(
            f"Cannot get the pretrained weights '{tag}' of open_clip model '{arch}' "
            f"({type(e).__name__}: {first_line(e)}): connect to the internet (and "
            "unset HF_HUB_OFFLINE)") from e
    spec = f"open_clip:{arch}/{tag}" if tag else f"open_clip:{arch}"
    check_network_warnings(said, spec)
    offline = offline or (None if request.pretrained else _hub_down())
    try:  # SigLIP and others load a Hugging Face tokenizer: the Hub, sentencepiece
        with quiet_hub(offline=offline is not None):
            tokenizer = open_clip.get_tokenizer(arch)
    except Exception as e:  # download, cache and missing-package errors
        if offline is not None and not isinstance(e, ImportError):
            raise ImageNetXError(
                f"No network for the tokenizer of open_clip model '{spec}': it is not in "
                f"{hub_cache()} and {hub_name()} cannot be reached ({offline[1]}); "
                f"connect to the internet and run again, or copy {hub_cache()} from a "
                "machine that has it") from None
        raise ImageNetXError(
            f"Cannot load the tokenizer of open_clip model '{spec}' "
            f"({type(e).__name__}: {first_line(e)}): connect to the internet (and unset "
            "HF_HUB_OFFLINE), and install what it names (e.g. pip install "
            "sentencepiece)") from e
    return model, tokenizer, preprocess, spec, tag


def network_options(arch: str, tag: Optional[str]) -> dict:
    """The ``create_model`` options that build the network a pretrained
    tag's weights were trained as: ``force_quick_gelu`` where the tag's
    config names QuickGELU and the architecture's does not (OpenAI's CLIP,
    LAION-400M and MetaCLIP weights under the plain names; since open_clip
    2.29 ``create_model("ViT-B-32", pretrained="openai")`` builds ``nn.GELU``
    and only warns)."""
    import open_clip

    if not tag:
        return {}
    cfg = open_clip.get_pretrained_cfg(arch, tag) or {}
    arch_cfg = open_clip.get_model_config(arch) or {}
    if cfg.get("quick_gelu") and not arch_cfg.get("quick_gelu"):
        return {"force_quick_gelu": True}
    return {}


def check_network_warnings(said, spec: str) -> None:
    """Raises, in one line, when open_clip warned that the network built is
    not the one the weights were trained as (its "QuickGELU mismatch")."""
    for w in said:
        text = str(w.message)
        if "mismatch" in text.lower():
            raise ImageNetXError(
                f"open_clip built '{spec}' as another network than its weights were trained "
                f"as ({text.strip()}): use the architecture name the tag is listed under "
                "(open_clip.list_pretrained())")


def uses_quick_gelu(model) -> bool:
    """Whether the built network's activations are QuickGELU."""
    from open_clip.transformer import QuickGELU

    return any(isinstance(m, QuickGELU) for m in model.modules())


def _hub_down():
    """``("", why)`` when the Hub cannot be reached now, else None."""
    reason = hub_unreachable()
    return None if reason is None else ("", reason)


def _offline_reason(arch: str, tag: str):
    """``(Hub repo, why the Hub cannot be reached)`` when the weights come
    from the Hub and it cannot be reached now (they may still be in its
    cache), else None; weights from another address that are not cached
    and cannot be fetched are refused here in one line."""
    import open_clip

    cfg = open_clip.get_pretrained_cfg(arch, tag) or {}
    url = cfg.get("url")
    # open_clip downloads a URL's weights into ~/.cache/clip
    path = os.path.join(os.path.expanduser("~/.cache/clip"), os.path.basename(url or ""))
    return weights_offline(cfg.get("hf_hub"), url, f"open_clip model '{arch}/{tag}'",
                           path=path)


def zero_shot_classifier(model, tokenizer, preprocess, spec: str, request,
                         tag: Optional[str] = None):
    """A zero-shot Classifier from a created open_clip model.

    Args:
        model: the model (``create_model_and_transforms``' first item)
        tokenizer: its tokenizer (``open_clip.get_tokenizer``)
        preprocess: its eval transform
        spec: the spec, for messages, the record and the head's cache key
        request: the :class:`~imagenetx.models.sources.ModelRequest`
        tag (None): the pretrained tag loaded; the head is cached on disk
            only when it is given and ``request.pretrained``
    """
    import open_clip
    import torch

    from imagenetx.classes.outputs import output_classes
    from imagenetx.models.classifier import Classifier
    from imagenetx.models.preprocess import from_transform
    from imagenetx.models.zeroshot import (
        ZeroShotClassifier, as_callables, cached_weights, describe, head_key,
        template_texts)

    model.eval()
    classes = output_classes(request.classes)
    texts = template_texts(request.templates, request.head_prompt)

    def build():
        return open_clip.build_zero_shot_classifier(
            model, tokenizer, list(classes.prompt_names), as_callables(texts),
            num_classes_per_batch=10, device="cpu")

    cache = request.pretrained and tag
    weights = (functools.partial(cached_weights, head_key(spec, True, classes, texts), build)
               if cache else build)  # built when the run starts
    bias = getattr(model, "logit_bias", None)
    head = ZeroShotClassifier(
        image_encoder(model), weights, model.logit_scale.exp().item(),
        None if bias is None else bias.item())
    sigmoid = bias is not None  # SigLIP: scored with its sigmoid, as its authors do
    with torch.no_grad():
        prep = from_transform(preprocess, f"open_clip model '{spec}'")
    return Classifier(spec, head, prep, classes, "open_clip",
                      record={"pretrained": tag, "quick_gelu": uses_quick_gelu(model),
                              **describe(classes, texts, request.templates, request.head_prompt)},
                      probabilities="sigmoid" if sigmoid else "softmax")


def image_encoder(model):
    """The image tower alone where ``encode_image`` is just it (CLIP,
    CustomTextCLIP), so the text tower stays off the device; else the
    model's ``encode_image``."""
    import torch
    from open_clip.model import CLIP, CustomTextCLIP

    if type(model).encode_image in (CLIP.encode_image, CustomTextCLIP.encode_image):
        return model.visual

    class _EncodeImage(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model.encode_image(x)

    return _EncodeImage(model)
