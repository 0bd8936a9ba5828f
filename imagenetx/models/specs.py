"""Resolve a model spec into an ImageNet classifier and its preprocessing.

Specs:

-   ``timm:NAME``: any timm model, e.g. ``timm:resnet50`` or
    ``timm:vit_base_patch16_224.augreg_in1k``; pretrained weights are fetched
    by timm (Hugging Face Hub)
-   ``torchvision:NAME[:WEIGHTS]``: a torchvision classification model and
    its weights enum entry (``DEFAULT`` when omitted), e.g.
    ``torchvision:resnet50:IMAGENET1K_V2``
-   ``checkpoint:PATH``: a local state dict (``torch.save`` file or
    ``.safetensors``), with ``arch`` naming the architecture (a timm name,
    ``timm:NAME`` or ``torchvision:NAME``); its keys must be the
    architecture's, unless ``remap_by_position`` maps tensors that line up
    one to one in order and shape

Preprocessing always comes from the model's own pretrained configuration.
Every mistake raises :class:`ImageNetXError` before any image is read.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from typing import Callable, Optional

from imagenetx.errors import ImageNetXError
from imagenetx.classes.imagenet import NUM_CLASSES

SCHEMES = ("timm", "torchvision", "checkpoint")

SPEC_HELP = (
    "use timm:NAME, torchvision:NAME[:WEIGHTS] or checkpoint:PATH with "
    "--arch NAME"
)


@dataclass
class Preprocessing:
    """How images become model inputs.

    Attributes:
        geometry: PIL image -> resized and cropped PIL image
        mean: the per-channel mean, in ``[0, 1]`` units
        std: the per-channel standard deviation, in ``[0, 1]`` units
        input_size: ``(channels, height, width)`` of the model input
    """

    geometry: Callable
    mean: tuple
    std: tuple
    input_size: tuple

    def transform(self, normalize: bool = True) -> Callable:
        """PIL image -> normalized float tensor, or, with ``normalize=False``,
        a uint8 tensor for :meth:`normalizer` to finish on the device."""
        import torchvision.transforms as T

        if not normalize:
            return T.Compose([self.geometry, T.PILToTensor()])
        return T.Compose(
            [self.geometry, T.ToTensor(), T.Normalize(self.mean, self.std)]
        )

    def normalizer(self, device) -> Callable:
        """Returns a function that normalizes uint8 ``(N, C, H, W)`` batches
        on ``device``, the finishing step of ``transform(normalize=False)``.
        """
        import torch

        # made once: a tensor built per batch would sync the device
        mean = torch.tensor(self.mean, device=device).view(1, -1, 1, 1) * 255
        std = torch.tensor(self.std, device=device).view(1, -1, 1, 1) * 255
        return lambda batch: (batch.float() - mean) / std


@dataclass
class LoadedModel:
    """A classifier ready for inference.

    Attributes:
        spec: the spec it was loaded from
        model: the ``torch.nn.Module``, in eval mode, on the CPU
        preprocessing: its :class:`Preprocessing`
    """

    spec: str
    model: torch.nn.Module
    preprocessing: Preprocessing


def parse_spec(
    spec: str, arch: Optional[str] = None, remap_by_position: bool = False
) -> tuple:
    """Splits a model spec, checking its syntax only (imports no model
    library).

    Args:
        spec: the model spec
        arch (None): the architecture of a ``checkpoint:`` spec
        remap_by_position (False): checked to apply to a ``checkpoint:``
            spec only

    Returns:
        ``(scheme, name, extra)``: ``extra`` is the torchvision weights name
        or the checkpoint architecture, else None

    Raises:
        ImageNetXError: if the spec is malformed
    """
    scheme, sep, rest = (spec or "").partition(":")
    if not sep or scheme not in SCHEMES or not rest:
        raise ImageNetXError(f"Unknown model spec '{spec}': {SPEC_HELP}")
    if scheme == "checkpoint":
        if not arch:
            raise ImageNetXError(
                f"Model spec '{spec}' needs --arch NAME (arch=...): the timm "
                "architecture the checkpoint was saved from, e.g. "
                "--arch efficientnet_lite0"
            )
        return scheme, rest, arch
    if remap_by_position:
        raise ImageNetXError(
            "--remap-by-position (remap_by_position=True) applies to "
            f"checkpoint:PATH specs only, not '{spec}'"
        )
    if arch:
        raise ImageNetXError(
            f"--arch applies to checkpoint:PATH specs only, not '{spec}'"
        )
    if scheme == "torchvision":
        name, _, weights = rest.partition(":")
        return scheme, name, weights or None
    return scheme, rest, None


def load_model(
    spec: str,
    arch: Optional[str] = None,
    pretrained: bool = True,
    remap_by_position: bool = False,
) -> LoadedModel:
    """Loads a classifier from a spec and checks it has 1000 outputs.

    Args:
        spec: ``timm:NAME``, ``torchvision:NAME[:WEIGHTS]`` or
            ``checkpoint:PATH``
        arch (None): the architecture of a ``checkpoint:`` spec
        pretrained (True): whether to load the pretrained weights of a
            ``timm:`` or ``torchvision:`` spec; False gives random weights,
            for throughput measurements
        remap_by_position (False): whether a ``checkpoint:`` state dict
            whose key names differ from ``arch``'s may be loaded by
            position, when its tensors line up one to one in order and shape
            (the same network exported under other names)

    Returns:
        a :class:`LoadedModel`

    Raises:
        ImageNetXError: for an unknown model or weights name, weights that
            cannot be fetched, a checkpoint that does not fit ``arch``, or a
            model whose output is not the 1000 ImageNet classes
    """
    scheme, name, extra = parse_spec(spec, arch, remap_by_position)
    if scheme == "timm":
        model, prep = _timm_model(name, pretrained)
    elif scheme == "torchvision":
        model, prep = _torchvision_model(name, extra, pretrained)
    else:
        model, prep = _checkpoint_model(name, extra, remap_by_position)
    model.eval()
    _check_outputs(model, prep, spec)
    return LoadedModel(spec, model, prep)


def _suggest(name: str, names) -> str:
    close = difflib.get_close_matches(name, list(names), n=5, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def _timm_model(name: str, pretrained: bool, what: str = None):
    import timm
    from timm.data import resolve_data_config

    what = what or f"timm model '{name}'"
    if not timm.is_model(name):
        raise ImageNetXError(
            f"Unknown {what}{_suggest(name, timm.list_models())}: see "
            "timm.list_models() for the names"
        )
    base, _, tag = name.partition(".")
    if tag and name not in timm.list_pretrained(name):
        tags = [n.partition(".")[2] for n in timm.list_pretrained(base + ".*")]
        raise ImageNetXError(
            f"Unknown pretrained tag '{tag}' of {what}: use one of "
            f"{', '.join(tags) or 'none (no pretrained weights)'}"
        )
    try:
        model = timm.create_model(name, pretrained=pretrained)
    except Exception as e:  # network, hub or cache errors, in many types
        raise ImageNetXError(
            f"Cannot get the pretrained weights of {what} "
            f"({type(e).__name__}: {_first_line(e)}): connect to the "
            "internet (and unset HF_HUB_OFFLINE), or load a local state dict "
            f"with --model checkpoint:PATH --arch {name}"
        ) from e
    cfg = resolve_data_config({}, model=model)
    return model, _timm_preprocessing(cfg)


def _timm_preprocessing(cfg: dict) -> Preprocessing:
    import torchvision.transforms as T
    from timm.data import create_transform

    # with use_prefetcher, timm's eval transform ends in a uint8 conversion
    # instead of ToTensor + Normalize; Preprocessing adds either
    full = create_transform(**cfg, use_prefetcher=True)
    steps = [
        t
        for t in full.transforms
        if not any(s in type(t).__name__ for s in ("ToTensor", "ToNumpy"))
    ]
    return Preprocessing(
        geometry=T.Compose(steps),
        mean=tuple(cfg["mean"]),
        std=tuple(cfg["std"]),
        input_size=tuple(cfg["input_size"]),
    )


def _torchvision_model(name: str, weights_name: Optional[str], pretrained):
    import torch
    import torchvision.models as tvm

    names = tvm.list_models(module=tvm)
    if name not in names:
        raise ImageNetXError(
            f"Unknown torchvision classification model '{name}'"
            f"{_suggest(name, names)}: see "
            "torchvision.models.list_models(module=torchvision.models)"
        )
    enum = tvm.get_model_weights(name)
    weights_name = weights_name or "DEFAULT"
    try:
        weights = enum[weights_name.split(".")[-1]]
    except KeyError:
        raise ImageNetXError(
            f"Unknown weights '{weights_name}' of torchvision model '{name}':"
            f" use one of DEFAULT, {', '.join(w.name for w in enum)}"
        ) from None
    try:
        model = tvm.get_model(name, weights=weights if pretrained else None)
    except Exception as e:  # download errors
        raise ImageNetXError(
            f"Cannot get the weights {weights} of torchvision model '{name}' "
            f"({type(e).__name__}: {_first_line(e)}): connect to the "
            "internet, or put the file in the torch hub cache "
            f"({os.path.join(torch.hub.get_dir(), 'checkpoints')}), or load a"
            f" local state dict with --model checkpoint:PATH --arch "
            f"torchvision:{name}"
        ) from e
    return model, _torchvision_preprocessing(weights)


def _torchvision_preprocessing(weights) -> Preprocessing:
    import torchvision.transforms as T

    t = weights.transforms()
    crop = list(t.crop_size)
    return Preprocessing(
        geometry=T.Compose(
            [
                T.Resize(t.resize_size, t.interpolation, antialias=t.antialias),
                T.CenterCrop(crop),
            ]
        ),
        mean=tuple(t.mean),
        std=tuple(t.std),
        input_size=(3, crop[0], crop[-1]),
    )


def _checkpoint_model(path: str, arch: str, remap_by_position: bool):
    scheme, _, arch_name = arch.partition(":")
    if scheme == "torchvision" and arch_name:
        model, prep = _torchvision_model(arch_name, None, pretrained=False)
    else:
        arch_name = arch_name if scheme == "timm" and arch_name else arch
        model, prep = _timm_model(
            arch_name, pretrained=False, what=f"architecture '{arch}' (--arch)"
        )
    state = _read_state_dict(path)
    model.load_state_dict(
        _fit_state_dict(state, model, path, arch, remap_by_position)
    )
    return model, prep


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
            f"({type(e).__name__}: {_first_line(e)}): save a plain state "
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
            f"{tuple(target[k].shape)} in the model. Pass the --arch it was "
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
            "under other names, pass --remap-by-position "
            "(remap_by_position=True) to load them by position"
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
        + "), so --remap-by-position cannot load it. Pass the --arch it was "
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


def _check_outputs(model, prep: Preprocessing, spec: str) -> None:
    import torch

    with torch.inference_mode():
        out = model(torch.zeros((1, *prep.input_size)))
    if isinstance(out, (tuple, list)):
        out = out[0]
    if out.ndim != 2 or out.shape[1] != NUM_CLASSES:
        raise ImageNetXError(
            f"Model '{spec}' outputs shape {tuple(out.shape)}, not the "
            f"{NUM_CLASSES} ImageNet classes: choose an ImageNet-1k "
            "classifier (e.g. a timm tag ending in in1k)"
        )


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0][:300] if text else ""
