"""What every model run shares: where it runs (:func:`place`: the rank of a
sharded run, its device, autocast, batch size and decoding workers) and the
batch loop (:func:`stream`: decoded batches -> device inputs -> a task ->
the background writer, with progress).

A task (classify, a probe's levels, an attack) is any callable
``(positions, images on the device, failures) -> result``; the writer turns
results into database updates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Optional

import fiftyone.core.utils as fou
import torch

from imagenetx.models.distributed import Ranks, join
from imagenetx.models.engine import amp_dtype, default_batch_size, resolve_device
from imagenetx.models.loader import default_workers
from imagenetx.models.options import RunOptions


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


def progress_bar(total: int, progress, ranks: Ranks) -> fou.ProgressBar:
    """A run's progress bar (rank 0's only, in a sharded run); ``progress``
    as in :func:`imagenetx.models.inference.predict`."""
    return fou.ProgressBar(total=total, progress=progress if ranks.main else False)


def stream(batches: Iterable, inputs: Callable, task: Callable, put: Callable,
           pb: fou.ProgressBar) -> None:
    """Runs every batch through ``inputs`` and ``task`` and hands each
    result to ``put``, counting its images on ``pb``.

    Args:
        batches: decoded :class:`~imagenetx.models.loader.Batch` es
        inputs: a batch -> ``(positions, images, failures)``
        task: those -> a result
        put: takes each result (the background writer's ``put``)
        pb: the run's progress bar
    """
    for batch in batches:
        positions, images, failed = inputs(batch)
        put(task(positions, images, failed))
        pb.update(len(positions) + len(failed))
