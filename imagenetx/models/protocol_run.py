"""A protocol (:mod:`imagenetx.protocols`) applied to a model run.

:func:`resolve_run` fills what the user left open with the protocol's pins
(the decoder, the autocast, a zero-shot prompt) and names every setting
given on top of them as a departure; :func:`apply_preprocessing` gives the
loaded classifier the protocol's resize / crop, normalization and logit
scale. The field's run record keeps the protocol, its pins and the
departures (:meth:`ProtocolRun.record`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from imagenetx.protocols import Protocol, resolve_protocol
from imagenetx.protocols.base import IMAGENET_MEAN, IMAGENET_STD
from imagenetx.models.zeroshot import ZeroShotClassifier


@dataclass(frozen=True)
class ProtocolRun:
    """The protocol a run follows and where it departs from it.

    Attributes:
        protocol: the protocol (None: the model's own configuration)
        departures: the pinned parameters the run set otherwise
        benchmark: the dataset's benchmark (a protocol may pin another
            geometry for it)
    """

    protocol: Optional[Protocol] = None
    departures: Tuple[str, ...] = ()
    benchmark: str = ""

    def with_departures(self, more: Sequence[str]) -> "ProtocolRun":
        return dataclasses.replace(
            self, departures=tuple(dict.fromkeys([*self.departures, *more])))

    def record(self) -> dict:
        """The run record's part: the protocol's name, every pinned value,
        the departures (nothing without a protocol)."""
        if self.protocol is None:
            return {}
        return {"protocol": self.protocol.name, "protocol_pins": self.protocol.pins(),
                "departures": list(self.departures)}

    def note(self) -> str:
        """``not the authors' setting: n, attack.eps`` (empty without
        departures)."""
        return departure_note(self.departures)


def departure_note(departures: Sequence[str]) -> str:
    """What a comparison with a published column says of a run that departs
    from its protocol."""
    return f"not the authors' setting: {', '.join(departures)}" if departures else ""


def resolve_run(benchmark: str, request, options) -> tuple:
    """The run's protocol (``options.protocol``, else the benchmark's own),
    the request and options with its pins filled in where the user gave
    nothing, and the departures.

    Args:
        benchmark: the dataset's benchmark name
        request: the :class:`~imagenetx.models.sources.ModelRequest`
        options: the :class:`~imagenetx.models.options.RunOptions`

    Returns:
        ``(request, options, ProtocolRun)``

    Raises:
        ImageNetXError: for an unknown protocol name
    """

    protocol = resolve_protocol(options.protocol, benchmark)
    if protocol is None:
        return request, options, ProtocolRun()
    departures = []
    changes = {}
    if options.decoder == "auto":
        changes["decoder"] = protocol.decoder
    elif options.decoder != protocol.decoder:
        departures.append("decoder")
    if protocol.amp is not None:
        if options.amp == "auto":
            changes["amp"] = protocol.amp
        elif options.amp != protocol.amp:
            departures.append("amp")
    if protocol.n is not None and options.limit is not None:
        departures.append("n")
    if protocol.prompt is not None:  # a zero-shot head's default; a classifier ignores it
        request = dataclasses.replace(request, default_prompt=protocol.prompt)
    options = dataclasses.replace(options, **changes)
    return request, options, ProtocolRun(protocol, tuple(departures), benchmark)


def with_zero_shot_departures(run: ProtocolRun, classifier, request) -> ProtocolRun:
    """``run`` with the departures of a zero-shot head's prompt and classes,
    once the model is loaded (only then is it known whether the head is
    zero-shot: an ``hf:`` spec is for a CLIP or SigLIP only)."""
    protocol = run.protocol
    if protocol is None or not classifier.record.get("zero_shot"):
        return run
    departures = []
    if protocol.prompt is not None and request.head_prompt != protocol.prompt:
        departures.append("prompt")
    if protocol.classes is not None and request.classes != protocol.classes:
        departures.append("classes")
    return run.with_departures(departures)


def apply_preprocessing(run: ProtocolRun, classifier) -> None:
    """Gives ``classifier`` the protocol's geometry, normalization and
    zero-shot logit scale (in place; nothing without a protocol)."""
    protocol = run.protocol
    if protocol is None:
        return
    prep = classifier.preprocessing
    geometry = protocol.geometry_for(run.benchmark)
    if geometry == "resize256-crop224" or (
            geometry == "robustbench" and classifier.source != "timm"):
        prep = dataclasses.replace(prep, geometry=res256_crop224(), input_size=(3, 224, 224))
    elif geometry == "model-vs-human":
        prep = dataclasses.replace(prep, geometry=ModelVsHumanGeometry(),
                                   input_size=(3, 224, 224))
    if protocol.normalization == "imagenet":
        prep = dataclasses.replace(prep, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    classifier.preprocessing = prep
    if protocol.logit_scale is not None:
        head = classifier.module
        if isinstance(head, ZeroShotClassifier) and head.bias is None:
            head.scale = float(protocol.logit_scale)


def res256_crop224():
    """RobustBench's ``Res256Crop224`` and Gavrikov's ``TEST_TRANSFORMS``
    before ``ToTensor``: PIL ``Resize(256)`` (bilinear) + ``CenterCrop(224)``."""
    import torchvision.transforms as T

    return T.Compose([T.Resize(256, T.InterpolationMode.BILINEAR, antialias=True),
                      T.CenterCrop(224)])


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
