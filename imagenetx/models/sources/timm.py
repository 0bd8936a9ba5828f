"""``timm:NAME``: any timm model with an ImageNet-1k head, e.g.
``timm:resnet50`` or ``timm:vit_base_patch16_224.augreg_in1k``; pretrained
weights are fetched by timm (Hugging Face Hub, with its cache)."""

# lazy imports: start-up (a spec is checked without importing torch or the model's library)

from __future__ import annotations

from imagenetx.classes.outputs import imagenet_outputs
from imagenetx.errors import ImageNetXError
from imagenetx.models.sources._common import first_line, suggest
from imagenetx.models.sources._network import (
    hub_cache,
    hub_name,
    missing_weights,
    quiet_hub,
    weights_offline,
)

SYNTAX = "timm:NAME"
ZERO_SHOT = False


def parse(rest: str, request) -> None:
    """Nothing to check before timm is imported."""


def load(rest: str, request):
    from imagenetx.models.classifier import Classifier

    model, prep = timm_model(rest, request.pretrained)
    return Classifier(f"timm:{rest}", model, prep, imagenet_outputs(), "timm",
                      record={"pretrained": request.pretrained, "weights": weights_name(model)})


def weights_name(model) -> str:
    """The ``name.tag`` of the pretrained configuration a timm model was
    built with (its mean / std, input size, crop and interpolation are the
    tag's): what timm's results tables name."""
    cfg = getattr(model, "pretrained_cfg", None) or {}
    arch = cfg.get("architecture") or getattr(model, "default_cfg", {}).get("architecture", "")
    tag = cfg.get("tag")
    return f"{arch}.{tag}" if tag else str(arch)


def timm_model(name: str, pretrained: bool, what: str = None):
    """``(model, preprocessing)`` of a timm model name.

    Raises:
        ImageNetXError: for an unknown name or pretrained tag, or weights
            that cannot be fetched
    """
    import timm
    from timm.data import resolve_data_config

    from imagenetx.models.preprocess import from_timm_config

    what = what or f"timm model '{name}'"
    if not timm.is_model(name):
        raise ImageNetXError(
            f"Unknown {what}{suggest(name, timm.list_models())}: see "
            "timm.list_models() for the names"
        )
    base, _, tag = name.partition(".")
    if tag and name not in timm.list_pretrained(name):
        tags = [n.partition(".")[2] for n in timm.list_pretrained(base + ".*")]
        raise ImageNetXError(
            f"Unknown pretrained tag '{tag}' of {what}: use one of "
            f"{', '.join(tags) or 'none (no pretrained weights)'}"
        )
    offline = _offline_reason(name, what) if pretrained else None
    try:
        with quiet_hub(offline=offline is not None):
            model = timm.create_model(name, pretrained=pretrained)
    except Exception as e:  # network, hub or cache errors, in many types
        if offline is not None:
            raise missing_weights(
                what, offline[0], hub_cache(), hub_name(), offline[1],
                f"load a local state dict with `model=checkpoint:PATH` and `arch={name}`"
            ) from None
        raise ImageNetXError(
            f"Cannot get the pretrained weights of {what} "
            f"({type(e).__name__}: {first_line(e)}): connect to the "
            "internet (and unset HF_HUB_OFFLINE), or load a local state dict "
            f"with `model=checkpoint:PATH` and `arch={name}`"
        ) from e
    cfg = resolve_data_config({}, model=model)
    return model, from_timm_config(cfg)


def _offline_reason(name: str, what: str):
    """``(Hub repo, why the Hub cannot be reached)`` when the weights of
    ``name`` come from the Hub and it cannot be reached now (they may still
    be in its cache), else None; weights from another address that are not
    cached and cannot be fetched are refused here in one line."""
    from timm.models import get_pretrained_cfg

    cfg = get_pretrained_cfg(name)
    if cfg is None:
        return None
    return weights_offline(cfg.hf_hub_id, cfg.url, what, f"load a local state dict with "
                                                          f"`model=checkpoint:PATH` and `arch={name}`")
