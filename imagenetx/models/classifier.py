"""The one model interface: whatever its source, a model becomes a
:class:`Classifier`.

A classifier says how images become inputs (its :class:`Preprocessing`,
from the model's own configuration) and maps a normalized batch to logits
over named classes (:class:`~imagenetx.classes.outputs.OutputClasses`). The
pipeline (decoding, batching, devices, autocast, sharding, writing,
evaluation, probes, attacks) takes a classifier and nothing
source-specific. Its ``module`` returns a plain logits tensor: tuple and
``ModelOutput`` returns are unwrapped once, here (:class:`LogitsOf`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch

from imagenetx.classes.outputs import OutputClasses
from imagenetx.errors import ImageNetXError
from imagenetx.models.preprocess import Preprocessing


@dataclass
class Classifier:
    """A model ready for the pipeline.

    Attributes:
        spec: the spec it was loaded from, e.g. ``open_clip:ViT-B-16/openai``
        module: normalized ``(N, 3, H, W)`` float batch -> ``(N, K)`` logits,
            in eval mode, on the CPU
        preprocessing: how images become its inputs
        classes: what its ``K`` outputs stand for
        source: the source that loaded it (``timm``, ``open_clip``, ...)
        record: what produced its outputs beyond the spec (zero-shot
            templates, the pretrained tag, ...), kept in the run's info
        differentiable: whether gradients reach its inputs (attacks need
            them)
        probabilities: how logits become the stored confidences:
            ``"softmax"``, or ``"sigmoid"`` for models trained with a sigmoid
            loss (SigLIP, scored as its authors do)
    """

    spec: str
    module: torch.nn.Module
    preprocessing: Preprocessing
    classes: OutputClasses
    source: str
    record: dict = field(default_factory=dict)
    differentiable: bool = True
    probabilities: str = "softmax"


class LogitsOf(torch.nn.Module):
    """Wraps a model whose forward returns a tuple, a list, a dict or a
    transformers ``ModelOutput``: returns its logits tensor.

    Args:
        model: the wrapped model
        key ("logits"): the entry of a dict-like output
    """

    def __init__(self, model: torch.nn.Module, key: str = "logits"):
        super().__init__()
        self.model = model
        self.key = key

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return logits_of(self.model(x), self.key)


def logits_of(out, key: str = "logits") -> torch.Tensor:
    """The logits tensor of a model output (a tensor, a tuple / list whose
    first entry it is, or a dict / ``ModelOutput`` holding ``key``)."""
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "keys") and key in out.keys():
        return out[key]
    if isinstance(out, (tuple, list)) and out:
        return logits_of(out[0], key)
    raise TypeError(f"a model output of type {type(out).__name__} holds no "
                    f"'{key}' tensor")


def check_outputs(classifier: Classifier, expected: Optional[int] = None) -> None:
    """Raises ImageNetXError unless the classifier maps one input to
    ``(1, len(classes))`` logits (or ``expected``)."""
    want = expected or len(classifier.classes)
    x = torch.zeros((1, *classifier.preprocessing.input_size))
    with torch.inference_mode():
        try:
            if not getattr(classifier.module, "materialized", True):
                # a zero-shot head built when the run starts has one column per
                # class by construction: its image tower is what can fail here
                classifier.module.encoder(x)
                return
            out = classifier.module(x)
        except TypeError as e:
            raise ImageNetXError(
                f"Model '{classifier.spec}' gives no logits ({e}): choose an image "
                "classifier") from None
    if out.ndim != 2 or out.shape[1] != want:
        raise ImageNetXError(
            f"Model '{classifier.spec}' outputs shape {tuple(out.shape)}, not the "
            f"{want} {classifier.classes.name} classes: choose an ImageNet-1k "
            "classifier (e.g. a timm tag ending in in1k)"
        )
