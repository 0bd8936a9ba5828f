"""``checkpoint:PATH``: a local state dict (``torch.save`` file or
``.safetensors``), with ``arch`` naming the architecture (a timm name,
``timm:NAME``, ``torchvision:NAME``, or ``open_clip:ARCH``: a zero-shot
classifier built as ``open_clip:`` builds it); its keys must be the
architecture's, unless ``remap_by_position`` maps tensors that line up one
to one in order and shape."""

# lazy imports: start-up (a spec is checked without importing torch or the model's library)

from __future__ import annotations

import os

from imagenetx.classes.outputs import imagenet_outputs
from imagenetx.errors import ImageNetXError
from imagenetx.models.sources._common import first_line

SYNTAX = "checkpoint:PATH (with `arch`)"


def ZERO_SHOT(request) -> bool:  # noqa: N802 (the sources' flag, per request here)
    """A checkpoint of an ``open_clip:`` architecture is a zero-shot model."""
    return (request.arch or "").startswith("open_clip:")


def parse(rest: str, request) -> None:
    """A checkpoint needs its architecture."""
    if not request.arch:
        raise ImageNetXError(
            f"Model spec 'checkpoint:{rest}' needs `arch`: the timm "
            "architecture the checkpoint was saved from, e.g. "
            "`arch=efficientnet_lite0`"
        )


def load(path: str, request):
    from imagenetx.models.classifier import Classifier
    from imagenetx.models.sources.timm import timm_model
    from imagenetx.models.sources.torchvision import torchvision_model

    arch = request.arch
    scheme, _, arch_name = arch.partition(":")
    if scheme == "open_clip" and arch_name:
        return _open_clip(path, arch_name, request)
    if scheme == "torchvision" and arch_name:
        model, prep = torchvision_model(arch_name, None, pretrained=False)
    else:
        arch_name = arch_name if scheme == "timm" and arch_name else arch
        model, prep = timm_model(
            arch_name, pretrained=False, what=f"architecture '{arch}' (`arch`)"
        )
    state = _read_state_dict(path)
    model.load_state_dict(
        _fit_state_dict(state, model, path, arch, request.remap_by_position)
    )
    return Classifier(f"checkpoint:{path}", model, prep, imagenet_outputs(),
                      "checkpoint", record={"arch": arch})


def _open_clip(path: str, arch: str, request):
    """An OpenCLIP architecture with the checkpoint's weights, as a zero-shot
    classifier (:func:`~imagenetx.models.sources.open_clip.zero_shot_classifier`);
    ``ARCH/TAG`` builds the network the tag's weights were trained as
    (OpenAI's QuickGELU)."""
    import open_clip

    from imagenetx.models.sources.open_clip import network_options, zero_shot_classifier

    arch, _, tag = arch.partition("/")
    if arch not in open_clip.list_models():
        raise ImageNetXError(
            f"Unknown open_clip architecture '{arch}' (`arch=open_clip:{arch}`): see "
            "open_clip.list_models()")
    if tag and tag not in open_clip.list_pretrained_tags_by_model(arch):
        raise ImageNetXError(
            f"Unknown pretrained tag '{tag}' of open_clip architecture '{arch}' "
            f"(`arch=open_clip:{arch}/{tag}`): use one of "
            f"{', '.join(open_clip.list_pretrained_tags_by_model(arch)) or 'none'}")
    model, _, preprocess = open_clip.create_model_and_transforms(
        arch, pretrained=None, **network_options(arch, tag))
    state = _read_state_dict(path)
    model.load_state_dict(_fit_state_dict(state, model, path, f"open_clip:{arch}",
                                          request.remap_by_position))
    classifier = zero_shot_classifier(model, open_clip.get_tokenizer(arch), preprocess,
                                      f"checkpoint:{path}", request)
    classifier.record["arch"] = f"open_clip:{arch}/{tag}" if tag else f"open_clip:{arch}"
    return classifier


#: wrappers of a state dict that timm's ``load_state_dict`` leaves on
_MORE_WRAPPERS = ("model_state_dict", "state_dict_ema", "model_ema")


def _read_state_dict(path: str) -> dict:
    """The checkpoint's tensors, read by timm's ``load_state_dict``:
    ``.safetensors`` or ``torch.load(weights_only=True)``, unwrapped from
    ``state_dict``/``model`` (before an EMA copy, as timm's ``validate.py``),
    else from one of :data:`_MORE_WRAPPERS`, ``module.``/``_orig_mod.``
    prefixes stripped."""
    import torch
    from timm.models import clean_state_dict, load_state_dict

    if not os.path.isfile(path):
        raise ImageNetXError(
            f"Checkpoint '{path}' does not exist: pass the path of a state "
            "dict saved with torch.save(model.state_dict(), PATH) or "
            "safetensors.torch.save_file(model.state_dict(), PATH)"
        )
    safetensors = path.endswith(".safetensors")
    try:
        state = load_state_dict(path, use_ema=False, weights_only=True)
    except Exception as e:  # pickle, zip, safetensors or weights-only errors
        how = "safetensors" if safetensors else "weights_only=True"
        save = (
            "safetensors.torch.save_file(model.state_dict(), PATH)"
            if safetensors
            else "torch.save(model.state_dict(), PATH)"
        )
        raise ImageNetXError(
            f"Cannot load checkpoint '{path}' with {how} "
            f"({type(e).__name__}: {first_line(e)}): save a plain state "
            f"dict with {save}"
        ) from e
    for key in _MORE_WRAPPERS:
        if isinstance(state.get(key), dict):
            state = clean_state_dict(state[key])
            break
    if not state or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ImageNetXError(
            f"Checkpoint '{path}' holds no state dict of tensors: save one "
            "with torch.save(model.state_dict(), PATH)"
        )
    return state


def _fit_state_dict(
    state: dict, model, path: str, arch: str, remap_by_position: bool
) -> dict:
    """The checkpoint's tensors under the model's key names.

    Keys that match are used as they are. Otherwise, with
    ``remap_by_position``, tensors that line up one to one, in order and
    shape, are mapped by position (timm's ``remap_state_dict``): the same
    network exported under other names, like the efficientnet-lite0
    package's weights for timm's ``efficientnet_lite0``.
    """
    from timm.models import remap_state_dict

    target = model.state_dict()
    where = f"Checkpoint '{path}' does not fit architecture '{arch}'"
    if set(state) == set(target):
        bad = [k for k in target if tuple(state[k].shape) != tuple(target[k].shape)]
        if not bad:
            return state
        k = bad[0]
        raise ImageNetXError(
            f"{where}: {len(bad)} tensors differ in shape, e.g. '{k}' is "
            f"{tuple(state[k].shape)} in the checkpoint and "
            f"{tuple(target[k].shape)} in the model. Pass the `arch` it was "
            "trained with (a 1000-class ImageNet head)"
        )
    lined_up = [tuple(v.shape) for v in state.values()] == [
        tuple(v.shape) for v in target.values()
    ]
    if lined_up and remap_by_position:
        return remap_state_dict(state, model, allow_reshape=False)
    if lined_up:
        pairs = [(a, b) for a, b in zip(state, target) if a != b][:2]
        raise ImageNetXError(
            f"{where} by key names: its keys differ from the model's (e.g. "
            + ", ".join(f"'{a}' where the model has '{b}'" for a, b in pairs)
            + f"), though its {len(state)} tensors line up one to one with "
            "the model's in order and shape. If it is the same network "
            "under other names, pass `remap_by_position=True` "
            "to load them by position"
        )
    extra = [k for k in state if k not in target][:2]
    missing = [k for k in target if k not in state][:2]
    keys = "; ".join(
        [f"its {_quoted(extra)} not in the model"] * bool(extra)
        + [f"the model's {_quoted(missing)} not in it"] * bool(missing)
    )
    raise ImageNetXError(
        f"{where}: its keys differ from the model's (e.g. {keys}), and its "
        f"tensors do not line up by position either (it has {len(state)} "
        f"tensors where the model has {len(target)}"
        + _first_shape_difference(list(state.items()), list(target.items()))
        + "), so `remap_by_position=True` cannot load it. Pass the `arch` it was "
        "trained with (a 1000-class ImageNet head)"
    )


def _quoted(keys: list) -> str:
    return ", ".join(f"'{k}'" for k in keys)


def _first_shape_difference(state: list, target: list) -> str:
    for (k, v), (kt, vt) in zip(state, target):
        if tuple(v.shape) != tuple(vt.shape):
            return (
                f"; in order, '{k}' {tuple(v.shape)} meets model tensor "
                f"'{kt}' {tuple(vt.shape)}"
            )
    return ""
