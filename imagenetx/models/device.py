"""Where a model run goes: its rank of a sharded run, device, autocast dtype
and sizes (:func:`place`), and the classifier there in its compiled form
with one ``logits`` call on decoded batches (:class:`Engine`).

The engine never picks a grad mode: prediction and probes call it under
``torch.inference_mode()``, an attack with gradients enabled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from imagenetx.errors import ImageNetXError
from imagenetx.models.classifier import Classifier
from imagenetx.models.config import RunOptions
from imagenetx.models.distributed import Ranks, join
from imagenetx.models.loader import default_workers
from imagenetx.models.zeroshot import materialize
from imagenetx.options import AMPS, DEVICES

#: images per forward pass on the CPU (measured: larger batches are no
#: faster there) and on a GPU
DEFAULT_BATCH_SIZE = 64
CUDA_BATCH_SIZE = 256


def resolve_device(device: str) -> torch.device:
    """``auto``: CUDA when available, else the CPU; else the device named.

    Raises:
        ImageNetXError: for an unknown device or CUDA without a GPU
    """
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.split(":")[0] not in DEVICES[1:]:
        raise ImageNetXError(
            f"Unknown device '{device}': use auto, cpu or cuda (cuda:N)"
        )
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ImageNetXError(
            f"`device={device}` but PyTorch sees no CUDA GPU: use `device=cpu` "
            "(or auto)"
        )
    return torch.device(device)


def amp_dtype(amp: str, device: torch.device) -> Optional[torch.dtype]:
    """The autocast dtype of ``--amp`` on ``device`` (None: no autocast);
    ``auto`` is bf16 (fp16 on older GPUs) on CUDA and off on the CPU."""
    if amp not in AMPS:
        raise ImageNetXError(
            f"Unknown `amp` '{amp}': use one of {', '.join(AMPS)}"
        )
    if amp == "auto":
        if device.type != "cuda":
            return None
        return (
            torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        )
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "off": None}[amp]


def default_batch_size(device: torch.device) -> int:
    """Images per forward pass when none is given: 256 on a GPU, 64 on the
    CPU."""
    return CUDA_BATCH_SIZE if device.type == "cuda" else DEFAULT_BATCH_SIZE


@dataclass
class Placement:
    """Where and in what sizes a run goes.

    Attributes:
        ranks: this process's place in a sharded run (one rank of one
            without torchrun)
        device: its device
        dtype: its autocast dtype (None: float32)
        batch_size: images per forward pass
        num_workers: decoding processes
    """

    ranks: Ranks
    device: torch.device
    dtype: Optional[torch.dtype]
    batch_size: int
    num_workers: int


def place(options: RunOptions) -> Placement:
    """Joins a sharded run when under torchrun and resolves the options'
    device, autocast and sizes for this rank."""
    ranks = join(options.device)  # under torchrun: this rank's share, its GPU
    device = ranks.device(resolve_device(options.device))
    dtype = amp_dtype(options.amp, device)
    batch_size = options.batch_size or default_batch_size(device)
    workers = options.num_workers
    if workers is None:
        workers = ranks.workers(default_workers())
    return Placement(ranks, device, dtype, batch_size, workers)


class Engine:
    """A classifier on its device.

    Args:
        classifier: the model
        device: where it runs
        dtype (None): the autocast dtype (None: float32)
        compile (False): ``torch.compile`` the module; batches are then padded
            to ``batch_size`` so the shape never changes
        batch_size (None): the fixed batch size of a compiled module
    """

    def __init__(self, classifier: Classifier, device: torch.device,
                 dtype: Optional[torch.dtype] = None, compile: bool = False,
                 batch_size: Optional[int] = None):
        self.classifier = classifier
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.pad = compile and batch_size is not None
        self.normalize_uint8 = classifier.preprocessing.normalizer(device)
        self.normalize_unit = classifier.preprocessing.normalizer(device, scale=1.0)
        materialize(classifier.module)  # a zero-shot head's class embeddings, on the CPU
        module = classifier.module.to(device, memory_format=torch.channels_last)
        self.module = torch.compile(module) if compile else module
        #: images through the model so far
        self.forwards = 0

    def logits(self, images: torch.Tensor) -> torch.Tensor:
        """float32 ``(N, K)`` logits of uint8 ``(N, 3, H, W)`` crops, or of
        float crops in ``[0, 1]`` (probes, attacks: differentiable in
        them), on the device."""
        scale_255 = images.dtype == torch.uint8
        n = images.shape[0]
        if self.pad and n < self.batch_size:
            fill = images.new_zeros((self.batch_size - n, *images.shape[1:]))
            images = torch.cat([images, fill])
        x = self.normalize_uint8(images) if scale_255 else self.normalize_unit(images)
        x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(self.device.type, dtype=self.dtype,
                            enabled=self.dtype is not None):
            out = self.module(x)
        self.forwards += n
        return out[:n].float()

    def probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """The stored confidences of logits: softmax, or the sigmoid of a
        model trained with one (SigLIP)."""
        if self.classifier.probabilities == "sigmoid":
            return logits.sigmoid()
        return logits.softmax(dim=1)
