"""One validated options object for model runs, shared by ``predict``,
probes, the command line and the App's forms.

:class:`RunOptions` says how a run goes (batching, decoding, device,
autocast, limits); :class:`~imagenetx.models.sources.ModelRequest` says
which model is loaded and how. Both are built from keyword arguments, from
parsed command-line flags (:func:`from_args`) or from an operator's
parameters (:func:`from_params`), and checked before anything is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Optional, Tuple

from imagenetx.errors import ImageNetXError
from imagenetx.models.sources import ModelRequest
from imagenetx.options import AMPS, DECODERS
from imagenetx.protocols import get_protocol
from imagenetx.protocols.robustbench import PREPROCESSING_CHOICES


@dataclass(frozen=True)
class RunOptions:
    """How a model run goes.

    Attributes:
        batch_size: images per forward pass; None: 256 on a GPU, 64 on the CPU
        num_workers: image decoding processes; None: one per CPU core this
            process may use
        device: ``auto``, ``cpu`` or ``cuda[:N]``
        amp: autocast dtype, ``auto``, ``bf16``, ``fp16`` or ``off``
        compile: ``torch.compile`` the model
        decoder: ``auto``, ``pil`` or ``torchvision``
        limit: run at most this many samples
        overwrite: redo samples that already have results
        protocol: a paper's protocol by name (:mod:`imagenetx.protocols`);
            None: the dataset's benchmark's own, ``none``: no protocol
        preprocessing: RobustBench's preprocessing by name
            (``Res256Crop224``, ``BicubicRes256Crop224``, ``Res224``,
            ``Crop288``, ``timm``), with ``protocol="robustbench"``; None:
            the leaderboard entry's own, else ``Res256Crop224`` (a departure)
    """

    batch_size: Optional[int] = None
    num_workers: Optional[int] = None
    device: str = "auto"
    amp: str = "auto"
    compile: bool = False
    decoder: str = "auto"
    limit: Optional[int] = None
    overwrite: bool = False
    protocol: Optional[str] = None
    preprocessing: Optional[str] = None

    def check(self) -> "RunOptions":
        """Returns itself; raises ImageNetXError for a bad option."""
        if self.batch_size is not None and self.batch_size < 1:
            raise ImageNetXError(f"`batch_size` must be at least 1, not {self.batch_size}")
        if self.num_workers is not None and self.num_workers < 0:
            raise ImageNetXError(f"`num_workers` must be 0 or more, not {self.num_workers}")
        if self.limit is not None and self.limit < 0:
            raise ImageNetXError(f"`limit` must be 0 or more, not {self.limit}")
        if self.decoder not in DECODERS:
            raise ImageNetXError(
                f"Unknown `decoder` '{self.decoder}': use one of {', '.join(DECODERS)}")
        if self.amp not in AMPS:
            raise ImageNetXError(f"Unknown `amp` '{self.amp}': use one of {', '.join(AMPS)}")
        get_protocol(self.protocol)  # an unknown name says so
        if self.preprocessing is not None and self.preprocessing not in PREPROCESSING_CHOICES:
            raise ImageNetXError(
                f"Unknown `preprocessing` '{self.preprocessing}': use one of RobustBench's "
                f"{', '.join(PREPROCESSING_CHOICES)}")
        if self.preprocessing is not None and self.protocol != "robustbench":
            raise ImageNetXError(
                f"`preprocessing={self.preprocessing}` names one of RobustBench's "
                "preprocessings: it applies with `protocol=robustbench`; leave it out")
        return self


def _pick(cls, values: dict):
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names and v is not None})


def configure(request: Optional[ModelRequest] = None, options: Optional[RunOptions] = None,
              **values) -> Tuple[ModelRequest, RunOptions]:
    """The config objects of a keyword door (``predict(..., batch_size=8)``):
    ``request`` and ``options`` (default: the defaults) with ``values`` set
    on whichever of the two has each field.

    Raises:
        TypeError: for a name that is neither's field
    """
    request, options = request or ModelRequest(), options or RunOptions()
    names = {cls: {f.name for f in fields(cls)} for cls in (ModelRequest, RunOptions)}
    unknown = sorted(set(values) - names[ModelRequest] - names[RunOptions])
    if unknown:
        raise TypeError(
            f"unexpected keyword argument {unknown[0]!r}: the run takes those of ModelRequest "
            f"({', '.join(sorted(names[ModelRequest]))}) and RunOptions "
            f"({', '.join(sorted(names[RunOptions]))})")
    request = replace(request, **{k: v for k, v in values.items() if k in names[ModelRequest]})
    options = replace(options, **{k: v for k, v in values.items() if k in names[RunOptions]})
    return request, options


def from_args(args) -> Tuple[ModelRequest, RunOptions]:
    """The options of parsed ``imagenetx predict`` / ``probe`` / ``attack``
    flags."""
    values = dict(vars(args))
    return _pick(ModelRequest, values), _pick(RunOptions, values).check()


def from_params(params: dict) -> Tuple[ModelRequest, RunOptions]:
    """The options of an App form's parameters (empty inputs mean the
    defaults)."""
    values = {k: (None if v in ("", []) else v) for k, v in params.items()}
    for flag in ("compile", "overwrite", "remap_by_position"):
        values[flag] = bool(values.get(flag))
    return _pick(ModelRequest, values), _pick(RunOptions, values).check()
