"""Sharded runs under ``torchrun``: one process (rank) per device or core.

``torchrun --nproc-per-node N -m imagenetx predict ...`` starts N ranks with
``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` in their environment; ``--nnodes
M`` spreads them over machines. :func:`join` reads that environment and joins
the process group (gloo on the CPU, nccl on CUDA). Rank 0 lists the samples
still to do and hands the list to every rank (:meth:`Ranks.agree`), so all
ranks split the same list; each takes a contiguous, non-overlapping share
(:meth:`Ranks.share`: no padding duplicates, unlike ``DistributedSampler``)
and writes its own samples to the one database (the embedded one on one
machine, a shared MongoDB through ``FIFTYONE_DATABASE_URI`` on several).
After a barrier, rank 0 evaluates and prints. Without torchrun the same code
runs as one rank of one.

A killed rank loses only its unwritten chunk: a re-run, with any number of
ranks, lists again what is still missing.
"""

import atexit
import os
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

import torch


@dataclass(frozen=True)
class Ranks:
    """Where this process stands in a sharded run.

    Attributes:
        rank: this process's rank, 0 to ``world_size - 1``
        world_size: the number of ranks
        local_rank: its rank on this machine (picks the GPU)
        local_world_size: the ranks on this machine (share the cores)
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1

    @property
    def sharded(self) -> bool:
        """Whether more than one rank runs."""
        return self.world_size > 1

    @property
    def main(self) -> bool:
        """Whether this is rank 0, the one that evaluates and prints."""
        return self.rank == 0

    def share(self, n: int) -> range:
        """This rank's positions of ``n`` items to do: a contiguous block,
        the blocks of all ranks partition ``range(n)`` (sizes differ by at
        most one)."""
        return range(n * self.rank // self.world_size,
                     n * (self.rank + 1) // self.world_size)

    def agree(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank (``value`` of the others is
        ignored); also a barrier: no rank goes on before all have it."""
        if not self.sharded:
            return value
        box = [value if self.main else None]
        torch.distributed.broadcast_object_list(box, src=0)
        self.barrier()
        return box[0]

    def gather(self, value: Any) -> List[Any]:
        """Every rank's ``value``, in rank order, on every rank."""
        if not self.sharded:
            return [value]
        out = [None] * self.world_size
        torch.distributed.all_gather_object(out, value)
        return out

    def barrier(self) -> None:
        """Waits until every rank gets here."""
        if self.sharded:
            torch.distributed.barrier()

    def device(self, device: torch.device) -> torch.device:
        """A CUDA device without an index becomes this rank's GPU
        (``cuda:LOCAL_RANK``); anything else stays."""
        if self.sharded and device.type == "cuda" and device.index is None:
            return torch.device("cuda", self.local_rank % torch.cuda.device_count())
        return device

    def workers(self, cores: int) -> int:
        """This rank's share of ``cores`` decoding processes when ranks
        share a machine (at least one)."""
        return max(1, cores // self.local_world_size)


def from_env(env: Optional[dict] = None) -> Ranks:
    """The ranks ``torchrun`` describes in the environment (one rank of one
    without it)."""
    env = os.environ if env is None else env
    world = int(env.get("WORLD_SIZE", "1"))
    return Ranks(rank=int(env.get("RANK", "0")), world_size=world,
                 local_rank=int(env.get("LOCAL_RANK", "0")),
                 local_world_size=int(env.get("LOCAL_WORLD_SIZE", str(world))))


def join(device: str = "auto") -> Ranks:
    """This process's :class:`Ranks`; under torchrun, joins the process
    group first (once per process; left at exit).

    Args:
        device: the run's ``--device``: nccl for CUDA (also ``auto`` when a
            GPU is visible), else gloo
    """
    ranks = from_env()
    if not ranks.sharded or torch.distributed.is_initialized():
        return ranks
    cuda = device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())
    if cuda:
        # broadcast_object_list moves objects through the current device
        torch.cuda.set_device(ranks.local_rank % torch.cuda.device_count())
    torch.distributed.init_process_group(backend="nccl" if cuda else "gloo")
    atexit.register(_leave)
    return ranks


def _leave():
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def pick(items: Sequence, positions: range) -> list:
    """``items`` at ``positions`` (a contiguous range)."""
    return list(items[positions.start:positions.stop])
