"""A protocol (:mod:`imagenetx.protocols`) applied to a model run.

:func:`resolve_run` checks the protocol applies to the dataset's benchmark
and fills what the user left open with its pins (the decoder, a zero-shot
prompt); once the model is loaded, :func:`settle_run` names the zero-shot
and precision departures, pins the precision (:func:`resolve_amp`: it
depends on whether the head is zero-shot and on the device) and gives the
classifier the protocol's preprocessing (:func:`apply_preprocessing`:
resize / crop, normalization, logit scale). The field's run record keeps
the protocol, its pins, the departures and what was applied
(:meth:`ProtocolRun.record`).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple

from imagenetx.errors import ImageNetXError
from imagenetx.protocols import Protocol, resolve_protocol
from imagenetx.protocols.base import IMAGENET_MEAN, IMAGENET_STD, departure_note, resolve_amp
from imagenetx.protocols.model_vs_human import zoo_entry
from imagenetx.protocols.robustbench import (
    SUBSET_SIZE, TIMM, choose_preprocessing, entry_normalization, entry_preprocessing,
    robustbench_names, select_subset)
from imagenetx.models.zeroshot import DEFAULT_TEMPLATES, ZeroShotClassifier


@dataclass(frozen=True)
class ProtocolRun:
    """The protocol a run follows and where it departs from it.

    Attributes:
        protocol: the protocol (None: the model's own configuration)
        departures: the pinned parameters the run set otherwise
        benchmark: the dataset's benchmark (a protocol may pin another
            geometry for it)
        preprocessing: RobustBench's preprocessing asked for by name
            (``--preprocessing``; None: the leaderboard entry's own)
        applied: what the run applied where a pin depends on the model or
            the device (model-vs-human's wrapper, RobustBench's named
            preprocessing, the precision, the input size, mean / std)
        details: each departure in words (``images: 8 of 5,000``)
    """

    protocol: Optional[Protocol] = None
    departures: Tuple[str, ...] = ()
    benchmark: str = ""
    preprocessing: Optional[str] = None
    applied: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)

    def with_departures(self, more: Sequence[str],
                        details: Optional[dict] = None) -> "ProtocolRun":
        """With ``more`` departures, ``details`` saying them in words."""
        return dataclasses.replace(
            self, departures=tuple(dict.fromkeys([*self.departures, *more])),
            details={**self.details, **(details or {})})

    def with_applied(self, **applied) -> "ProtocolRun":
        return dataclasses.replace(self, applied={**self.applied, **applied})

    def record(self) -> dict:
        """The run record's part: the protocol's name, every pinned value,
        the departures and what was applied (nothing without a protocol)."""
        if self.protocol is None:
            return {}
        return {"protocol": self.protocol.name, "protocol_pins": self.protocol.pins(),
                "departures": list(self.departures),
                "departure_details": {d: self.details[d] for d in self.departures
                                      if d in self.details},
                "protocol_applied": dict(self.applied)}

    def note(self) -> str:
        """``not the authors' setting: images: 8 of 5,000, attack.eps: ...``
        (empty without departures)."""
        return departure_note(self.departures, self.details)


def resolve_run(benchmark: str, request, options, dataset: str = "") -> tuple:
    """The run's protocol (``options.protocol``, else the benchmark's own),
    the request and options with its pins filled in where the user gave
    nothing, and the departures.

    Args:
        benchmark: the dataset's benchmark name
        request: the :class:`~imagenetx.models.sources.ModelRequest`
        options: the :class:`~imagenetx.models.config.RunOptions`
        dataset (""): the dataset's name, for messages

    Returns:
        ``(request, options, ProtocolRun)``

    Raises:
        ImageNetXError: for an unknown protocol name, or a protocol named on
            a dataset of a benchmark it does not apply to
    """

    protocol = resolve_protocol(options.protocol, benchmark)
    asked = options.preprocessing  # RunOptions.check: only with robustbench's protocol
    if protocol is None:
        return request, options, ProtocolRun()
    if not protocol.applies(benchmark):
        raise ImageNetXError(
            f"Protocol '{protocol.name}' applies to {' and '.join(protocol.applies_to)} "
            f"datasets only, and dataset '{dataset}' is a {benchmark} one: leave `protocol` "
            "out (its benchmark's own) or pass `protocol=none`")
    details = {}
    changes = {}
    if options.decoder == "auto":
        changes["decoder"] = protocol.decoder
    elif options.decoder != protocol.decoder:
        details["decoder"] = f"decoder: {options.decoder} (the authors': {protocol.decoder})"
    if protocol.n is not None and options.limit is not None:
        details["n"] = f"images: at most {options.limit:,} of {protocol.n:,}"
    if protocol.prompt is not None:  # a zero-shot head's default; a classifier ignores it
        request = dataclasses.replace(request, default_prompt=protocol.prompt)
    options = dataclasses.replace(options, **changes)
    return request, options, ProtocolRun(protocol, tuple(details), benchmark, asked,
                                         details=details)


def check_dataset(run: ProtocolRun, samples) -> None:
    """Refuses, in one line, RobustBench's protocol on a collection that does
    not hold its 5,000 validation images each once (matched by file name:
    ImageNet-C's folders repeat them).

    Raises:
        ImageNetXError: naming the dataset, how many it holds and the fix
    """
    if run.protocol is None or run.protocol.subset != "robustbench":
        return
    paths = samples.values("filepath")
    held = robustbench_names().intersection(os.path.basename(p) for p in paths)
    if len(held) < SUBSET_SIZE:
        raise ImageNetXError(
            f"Protocol '{run.protocol.name}' applies to ImageNet validation sets holding "
            f"RobustBench's {SUBSET_SIZE:,} images, and dataset '{samples._dataset.name}' "
            f"holds {len(held):,} of them (matched by file name): load the validation set "
            "(ImageNet-X from `dir=...`), or pass `protocol=none`")
    select_subset(paths, samples._dataset.name)  # each once


def settle_run(run: ProtocolRun, classifier, request, amp: str,
               device_type: str) -> Tuple[ProtocolRun, str]:
    """Once the model is loaded: the zero-shot and precision departures, the
    pinned precision and the protocol's preprocessing (given to
    ``classifier`` in place).

    Args:
        run: the run's protocol (:func:`resolve_run`)
        classifier: the loaded classifier
        request: the model request
        amp: ``--amp`` as given
        device_type: ``cuda`` or ``cpu``

    Returns:
        ``(run, amp)``: the run with its departures and what was applied,
        and the autocast to run with
    """
    run = with_zero_shot_departures(run, classifier, request)
    zero_shot = bool(classifier.record.get("zero_shot"))
    amp, departs = resolve_amp(run.protocol, amp, zero_shot, device_type)
    if departs:
        pinned = run.protocol.amp_for(zero_shot, device_type)
        run = run.with_departures(["amp"], {"amp": f"precision: {amp} (the authors': {pinned})"})
    if run.protocol is not None:
        run = run.with_applied(amp=amp)
    return apply_preprocessing(run, classifier), amp


def with_zero_shot_departures(run: ProtocolRun, classifier, request) -> ProtocolRun:
    """``run`` with the departures of a zero-shot head's prompt and classes,
    once the model is loaded (only then is it known whether the head is
    zero-shot: an ``hf:`` spec is for a CLIP or SigLIP only)."""
    protocol = run.protocol
    if protocol is None or not classifier.record.get("zero_shot"):
        return run
    details = {}
    if protocol.prompt is not None and request.head_prompt != protocol.prompt:
        given = (f"'{request.head_prompt}'" if request.head_prompt is not None
                 else f"templates {request.templates}")
        details["prompt"] = f"prompt: {given} (the authors': '{protocol.prompt}')"
    if protocol.templates is not None:
        if request.prompt is not None:
            details["prompt"] = (f"prompt: '{request.prompt}' (the authors': templates "
                                 f"{protocol.templates})")
        elif (request.templates or DEFAULT_TEMPLATES) != protocol.templates:
            details["templates"] = (f"templates: {request.templates} (the authors': "
                                    f"{protocol.templates})")
    if protocol.classes is not None and request.classes != protocol.classes:
        details["classes"] = f"classes: {request.classes} (the authors': {protocol.classes})"
    return run.with_departures(list(details), details)



def apply_preprocessing(run: ProtocolRun, classifier) -> ProtocolRun:
    """Gives ``classifier`` the protocol's geometry, normalization and
    zero-shot logit scale (in place; nothing without a protocol). Returns
    ``run`` with what was applied (and RobustBench's preprocessing
    departure)."""
    protocol = run.protocol
    if protocol is None:
        return run
    prep = classifier.preprocessing
    geometry = protocol.geometry_for(run.benchmark)
    if geometry == "resize256-crop224":
        prep = dataclasses.replace(prep, geometry=res256_crop224(), input_size=(3, 224, 224))
    elif geometry == "robustbench":
        name, entry, departures = choose_preprocessing(classifier.spec, run.preprocessing)
        prep = robustbench_preprocessing(name, classifier, entry)
        words = {"preprocessing": f"preprocessing: {name} (the entry's own: "
                                  f"{entry_preprocessing(entry)})"} if entry else {}
        run = run.with_departures(departures, words).with_applied(
            preprocessing=name, leaderboard_entry=entry)
    elif geometry == "model-vs-human-loader":
        prep = dataclasses.replace(prep, geometry=ModelVsHumanGeometry(),
                                   input_size=(3, 224, 224))
    elif geometry == "model-vs-human":
        prep, how, departures = model_vs_human_preprocessing(classifier)
        run = run.with_departures(departures).with_applied(preprocessing=how)
    if protocol.normalization == "imagenet":
        prep = dataclasses.replace(prep, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    classifier.preprocessing = prep
    if protocol.logit_scale is not None:
        head = classifier.module
        if isinstance(head, ZeroShotClassifier) and head.bias is None:
            head.scale = float(protocol.logit_scale)
    return run.with_applied(input_size=list(prep.input_size), mean=list(prep.mean),
                            std=list(prep.std))


def res256_crop224():
    """RobustBench's ``Res256Crop224`` and Gavrikov's ``TEST_TRANSFORMS``
    before ``ToTensor``: PIL ``Resize(256)`` (bilinear) + ``CenterCrop(224)``."""
    import torchvision.transforms as T

    return T.Compose([T.Resize(256, T.InterpolationMode.BILINEAR, antialias=True),
                      T.CenterCrop(224)])


def robustbench_geometry(name: str):
    """``(geometry, input size)`` of one of RobustBench's named
    preprocessings before ``ToTensor``, as its ``data.py`` writes them."""
    import torchvision.transforms as T

    if name == "Res256Crop224":
        return res256_crop224(), 224
    if name == "BicubicRes256Crop224":
        return T.Compose([T.Resize(256, interpolation=T.InterpolationMode("bicubic")),
                          T.CenterCrop(224)]), 224
    if name == "Res224":
        return T.Compose([T.Resize([224, 224])]), 224
    if name == "Crop288":
        return T.Compose([T.CenterCrop(288)]), 288
    raise ValueError(f"not one of RobustBench's preprocessings: {name}")


def robustbench_preprocessing(name: str, classifier, entry: Optional[str] = None):
    """``classifier``'s preprocessing with RobustBench's ``name`` geometry
    (``timm``: the model's own timm configuration, RobustBench's
    ``get_timm_model_preprocessing``) and the input RobustBench gives the
    leaderboard ``entry``: the raw ``[0, 1]`` tensor or its own mean / std
    (:func:`~imagenetx.protocols.robustbench.entry_normalization`); a model
    that is no entry keeps its own mean / std.

    Raises:
        ImageNetXError: ``timm`` for a model without a timm configuration
    """
    prep = classifier.preprocessing
    if entry is not None:
        mean, std = entry_normalization(entry)
        prep = dataclasses.replace(prep, mean=mean, std=std)
    if name == TIMM:
        arch = str(classifier.record.get("arch") or "")
        if classifier.source != "timm" and not (
                classifier.source == "checkpoint" and not arch.startswith("torchvision:")):
            raise ImageNetXError(
                f"`preprocessing=timm` takes a timm model's own configuration, and "
                f"'{classifier.spec}' is not a timm model: name one of RobustBench's "
                "Res256Crop224, BicubicRes256Crop224, Res224, Crop288")
        return prep
    geometry, size = robustbench_geometry(name)
    return dataclasses.replace(prep, geometry=geometry, input_size=(3, size, size))


def model_vs_human_preprocessing(classifier) -> tuple:
    """model-vs-human's loader and the wrapper its zoo ran the same network
    and weights with (:func:`~imagenetx.protocols.model_vs_human.zoo_entry`:
    by the zoo's own model names and weights, never by prefix):
    ``(preprocessing, what applied, departures)``.

    ``PytorchModel`` (torchvision's ``pretrained=True`` models, timm's by
    their names then, the checkpoints the zoo loads itself): the loader's 224
    tensor with ImageNet's mean / std. ``ClipPytorchModel``:
    ``Resize(n_px, BICUBIC)`` + ``CenterCrop(n_px)``, CLIP's mean / std;
    ``SwagPytorchModel``: ``Resize(s, BICUBIC)`` + ``CenterCrop(s)``;
    ``EfficientNetPytorchModel``: ``Resize(507, BICUBIC)`` +
    ``CenterCrop(475)``; ``ViTPytorchModel``: ``Resize((s, s))`` (bilinear,
    no crop), ``Normalize(0.5, 0.5)``; each after
    ``undo_default_preprocessing`` and ``ToPILImage``.

    A model the zoo never ran goes through the common path, and the
    applied value says so: a zero-shot head as ``ClipPytorchModel`` runs
    CLIP; a model with ImageNet's mean / std at 224 gets the loader's
    tensor; any other its own mean / std, and its own ``Resize`` +
    ``CenterCrop`` where its size is not 224 (what a wrapper does for a
    model trained otherwise).
    """
    import torchvision.transforms as T

    own = classifier.preprocessing
    zoo, entry = zoo_entry(classifier.spec, classifier.record)
    loader = ModelVsHumanGeometry()
    bicubic = T.InterpolationMode.BICUBIC
    if entry is not None:
        wrapper = entry["wrapper"]
        how = f"wrapper: {wrapper} (model-vs-human's {zoo})"
        if wrapper in ("PytorchModel", "PyContrastPytorchModel"):
            return dataclasses.replace(own, geometry=loader, input_size=(3, 224, 224),
                                       mean=IMAGENET_MEAN, std=IMAGENET_STD), how, ()
        size = int(entry["crop"] or entry["resize"][0])
        if wrapper == "ClipPytorchModel":
            size = own.input_size[-1]  # n_px: the model's own
        if wrapper == "ViTPytorchModel":
            resize = T.Resize((size, size))
        else:
            resize = T.Compose([T.Resize(int(entry["resize"][0]) if wrapper != "ClipPytorchModel"
                                         else size, bicubic), T.CenterCrop(size)])
        mean = own.mean if wrapper == "ClipPytorchModel" else tuple(entry["mean"])
        std = own.std if wrapper == "ClipPytorchModel" else tuple(entry["std"])
        return dataclasses.replace(
            own, geometry=ModelVsHumanWrapper(loader, resize), input_size=(3, size, size),
            mean=tuple(mean), std=tuple(std)), how, ()
    common = f"common path ({classifier.spec} is not in model-vs-human's zoo)"
    size = own.input_size[-1]
    if classifier.record.get("zero_shot"):
        resize = T.Compose([T.Resize(size, bicubic), T.CenterCrop(size)])
        return dataclasses.replace(
            own, geometry=ModelVsHumanWrapper(loader, resize), input_size=(3, size, size)
        ), f"{common}: ClipPytorchModel's resize, crop and own mean / std", ()
    if _close(own.mean, IMAGENET_MEAN) and _close(own.std, IMAGENET_STD) and size == 224:
        return dataclasses.replace(own, geometry=loader, input_size=(3, 224, 224)
                                   ), f"{common}: the loader's tensor", ()
    resize = T.Compose([T.Resize(size, bicubic), T.CenterCrop(size)]) if size != 224 else None
    return dataclasses.replace(
        own, geometry=ModelVsHumanWrapper(loader, resize), input_size=(3, size, size)
    ), f"{common}: own mean / std" + (", own resize and crop" if resize else ""), ()


def _close(a: Sequence[float], b: Sequence[float]) -> bool:
    return len(a) == len(b) and all(abs(x - y) < 1e-4 for x, y in zip(a, b))


class ModelVsHumanGeometry:
    """model-vs-human's ``PytorchLoader``: a 224 x 224 image as it is (its
    ``resize`` is off for 224-pixel datasets), any other size
    ``Resize(256)`` + ``CenterCrop(224)``."""

    def __init__(self):
        self.resize_crop = res256_crop224()  # built once, not per image

    def __call__(self, image):
        if image.size == (224, 224):
            return image
        return self.resize_crop(image)


class ModelVsHumanWrapper:
    """What a model-vs-human wrapper does to the loader's image before its
    own ``ToTensor`` + ``Normalize``: ``ToTensor``, ImageNet's
    ``Normalize``, ``undo_default_preprocessing`` (``x * std + mean``), then
    ``ToPILImage`` (which truncates ``x * 255`` to bytes), then its own
    resize and crop (None: the image stays 224 x 224).

    Args:
        loader: the loader's geometry (:class:`ModelVsHumanGeometry`)
        own (None): the wrapper's own resize (and crop)
    """

    def __init__(self, loader: ModelVsHumanGeometry, own=None):
        import torch

        self.loader = loader
        self.own = own
        self.mean = torch.tensor(IMAGENET_MEAN)
        self.std = torch.tensor(IMAGENET_STD)

    def __call__(self, image):
        import torchvision.transforms.functional as F

        x = F.normalize(F.to_tensor(self.loader(image)), IMAGENET_MEAN, IMAGENET_STD)
        x = x * self.std[:, None, None] + self.mean[:, None, None]
        image = F.to_pil_image(x)
        return image if self.own is None else self.own(image)
