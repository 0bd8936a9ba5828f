"""One model run: the setup every run shares, and a task saying what differs.

:func:`run` reads as its stages: the samples the task runs on and the
options checked, the dataset's benchmark and protocol, the model request
checked before the slow imports; then the placement (ranks, device,
autocast, sizes), the claim of the field written, the model loaded with the
protocol's preprocessing (no resize on a benchmark whose images keep their
geometry) and its decoder; the model goes to its device when the task first
asks (:attr:`ModelRun.engine`). The task then checks
what is stored and lists what is still to do, gives its decoding passes,
each streamed (decode -> device -> task -> background writer) under one
progress bar, and says what the run did. Before the task starts, before
each write and before the task finishes, the run checks that it still holds
its fields (:meth:`~imagenetx.store.claims.FieldClaim.check`): a run whose
field was taken over while it was paused stops in one line, writing nothing
more.

The task contract (a subclass of :class:`Task`; only ``describe``,
``start``, ``passes`` and ``finish`` have no default), one level:

-   ``target(field)``: the field the run writes and claims (a probe's
    ``<field>_<probe>``); refuses a bad name
-   ``claims(field)``: every field the run writes, each claimed (the
    target; embed's vectors too)
-   ``select(samples, field)``: the samples it runs on (a grouped
    dataset's slices), checked before anything loads
-   ``describe(model)``: the run in words, as another run refused the
    field reads it
-   ``departures`` / ``record()``: its departures from the protocol and its
    part of the run record (an attack's budget and settings)
-   ``decode_on_device``: whether a share of each batch may be decoded on
    the GPU (False: the task transforms CPU-decoded crops)
-   ``start(run) -> Plan``: checks the stored results against the run
    record and lists what is still to do, before anything is written: rank
    0 reads and declares (:meth:`ModelRun.listing`), every rank agrees and
    keeps its share (:meth:`ModelRun.share`); the :class:`Plan` carries what
    the run decided, so the task keeps no state of its own
-   ``passes(run, plan)``: the decoding passes (:class:`Pass`: the images,
    what is computed per batch, what is written of each result)
-   ``finish(run, plan)``: records and evaluates; returns the run's summary

The run owns the rest for every task: the error field (``<target>_error``:
declared by rank 0 of a sharded run, each unreadable image's reason
written with the results, cleared once read, dropped if declared and never
needed), the failures counted and shown, every write through the one
background writer, and the ranks' shares gathered (:meth:`Plan.share`,
:attr:`Plan.totals`) before ``finish``.

Classify (:class:`imagenetx.models.predict.Classify`) and a probe's levels
(:class:`imagenetx.probes.run.ProbeLevels`) are the tasks of the library;
an attack (:class:`imagenetx.attacks.run.Attack`) and embed
(:class:`imagenetx.models.embed.Embed`) are classify tasks whose passes
compose the classify batch with their own step.
"""

from __future__ import annotations

import contextlib
import functools
import time
from dataclasses import dataclass, field as dc_field
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence

import fiftyone as fo
import fiftyone.core.utils as fou
import torch

from imagenetx.benchmarks import get_benchmark
from imagenetx.benchmarks.base import Benchmark
from imagenetx.models import writer
from imagenetx.models.classifier import Classifier
from imagenetx.models.config import RunOptions
from imagenetx.models.device import Engine, Placement, amp_dtype, place
from imagenetx.models.distributed import Ranks, pick
from imagenetx.models.loader import DeviceInputs, ImageFiles, crop_reader, make_loader
from imagenetx.models.preprocess import with_border_crop, without_resize
from imagenetx.models.protocol_run import ProtocolRun, check_dataset, resolve_run, settle_run
from imagenetx.models.sources import ModelRequest, check_request, load_model
from imagenetx.protocols.published import published_top1
from imagenetx.store.claims import FieldClaim, claim_field
from imagenetx.store.datasets import get_dataset
from imagenetx.store.names import INFO_KEY, error_field


#: failures listed by name in a run's summary
FAILURES_SHOWN = 5

#: the parts of a field's record that say which predictions it holds: a run
#: adds to a field only where they are the same
IDENTITY = ("spec", "classes", "pretrained", "templates", "prompt", "num_templates",
            "attack", "protocol", "protocol_applied", "precision")


@dataclass
class Pass:
    """One decoding pass of a run over images.

    Attributes:
        paths: the images, by position (the plan's)
        compute: ``(positions, images, failures) -> result`` per batch; a
            result's ``failed``: its ``(position, message)`` pairs
        updates: a result -> ``{sample id: {path: value}}`` (the background
            writer's; the run adds the error field's)
        inputs (None): a decoded batch -> ``(positions, images, failures)``;
            None: moved to the model's device (and decoded there in part)
        images (None): the pass's :class:`~imagenetx.models.loader.ImageFiles`
            (a probe's levels applied in the workers); None: the plain crops
        depth (None): results queued for the writer; None: a write's worth
        ready (None): called on each result in the writer before ``updates``
    """

    paths: list
    compute: Callable
    updates: Callable
    inputs: Optional[Callable] = None
    images: Optional[ImageFiles] = None
    depth: Optional[int] = None
    ready: Optional[Callable] = None


@dataclass
class Plan:
    """What a task's ``start`` decided: a task's plan (a subclass) carries
    what its passes and finish read besides these, so the task itself keeps
    no state between them.

    Attributes:
        summary: the run's summary (with ``failed`` and ``failures``, which
            the run counts), counted into by the writes
        ids: this rank's samples still to do, by position (a result's
            positions index them)
        paths: their images
        failed: position -> why its image could not be read (the run's)
        shares: each rank's :meth:`share`, in rank order, once every pass
            is written (the run's)
    """

    summary: Any
    ids: list = dc_field(default_factory=list)
    paths: list = dc_field(default_factory=list)
    failed: dict = dc_field(default_factory=dict)
    shares: list = dc_field(default_factory=list)

    def share(self) -> dict:
        """What this rank's writes counted, gathered by the run: numbers
        are summed and lists joined over the ranks (:attr:`totals`)."""
        return {}

    @property
    def totals(self) -> dict:
        """The :attr:`shares` of every rank: numbers summed, lists joined
        in rank order (the run's order: the shares are contiguous)."""
        out = {}
        for share in self.shares:
            for key, value in share.items():
                out[key] = out[key] + value if key in out else value
        return out


@dataclass
class ModelRun:
    """What a task sees of its run, once the model is on its device.

    Attributes:
        samples: the samples the task selected
        dataset: their dataset
        model: the model spec
        field: the field the caller named
        target: the field the run writes (claimed)
        benchmark: the dataset's benchmark
        options: the run options, with the protocol's pins
        protocol: the protocol the run follows, with its departures
        classifier: the loaded model, with its preprocessing
        placement: ranks, device, autocast dtype and sizes
        reader: the workers' crop reader
        gpu_share: the share of each batch decoded on the GPU
        record: the run record kept in the field's ``info`` (with the
            ``takeovers`` of stale claims this run made)
        took_over: the line saying whose stale claim of the field the run took
        started: ``time.perf_counter()`` when the passes began
        claim: the run's claim of its fields; ``claim.check()`` before a
            write of the task's own (its record, its evaluation)
        closing: what runs as the run ends, however it ends
            (``closing.callback(...)``: a task's hooks taken off the model)
        declared_error: whether the listing declared the error field (a
            sharded run's; dropped at the end if no image failed)
    """

    samples: object
    dataset: object
    model: str
    field: str
    target: str
    benchmark: Benchmark
    options: RunOptions
    protocol: ProtocolRun
    classifier: Classifier
    placement: Placement
    reader: object
    gpu_share: float
    record: dict
    took_over: Optional[str] = None
    started: float = 0.0
    claim: Optional[FieldClaim] = None
    closing: Optional[contextlib.ExitStack] = None
    declared_error: bool = False

    @functools.cached_property
    def engine(self) -> Engine:
        """The classifier on its device, built on first use: a task checks
        what is stored first (a zero-shot head encodes its classes here)."""
        at = self.placement
        return Engine(self.classifier, at.device, at.dtype, self.options.compile,
                      at.batch_size)

    @property
    def ranks(self) -> Ranks:
        return self.placement.ranks

    @property
    def err_field(self) -> str:
        """The field of why each unreadable image could not be read."""
        return error_field(self.target)

    def listing(self, read: Callable):
        """``read()``, what is still to do, read (and declared) by rank 0
        before any writes and handed to every rank of a sharded run; rank 0
        declares the error field too (two ranks would race to)."""

        def first():
            value = read()
            declare = self.ranks.sharded and not self.dataset.has_field(self.err_field)
            if declare:
                self.dataset.add_sample_field(self.err_field, fo.StringField)
            return value, declare

        value, self.declared_error = self.ranks.agree(first() if self.ranks.main else None)
        if not self.ranks.main:
            self.dataset.reload()  # the fields rank 0 declared
        return value

    def share(self, columns: Sequence[list]) -> List[list]:
        """This rank's share of the listed ``columns`` (a contiguous part of
        each; all of them outside a sharded run)."""
        n = len(columns[0]) if columns else 0
        return [pick(c, self.ranks.share(n)) for c in columns]


class Task:
    """What a model run does that differs from run to run (the contract:
    :mod:`imagenetx.models.run`)."""

    #: the task's own departures from the protocol (an attack's budget)
    departures: Sequence[str] = ()
    #: each of :attr:`departures` in words
    departure_details: dict = {}
    #: whether a share of each batch may be decoded on the model's GPU
    decode_on_device: bool = True

    def target(self, field: str) -> str:
        """The field the run writes and claims."""
        return field

    def claims(self, field: str) -> List[str]:
        """Every field the run writes, each claimed: its target first."""
        return [self.target(field)]

    def select(self, samples, field: str):
        """The samples the run goes over (checked before anything loads)."""
        return samples

    def describe(self, model: str) -> str:
        """The run in words (``predict MODEL``)."""
        raise NotImplementedError

    def record(self) -> dict:
        """The task's part of the run record."""
        return {}

    def start(self, run: ModelRun) -> Plan:
        """Checks what is stored and lists what is still to do
        (:meth:`ModelRun.listing`, :meth:`ModelRun.share`): the plan."""
        raise NotImplementedError

    def passes(self, run: ModelRun, plan: Plan) -> List[Pass]:
        """The run's decoding passes (none when nothing is left to do)."""
        raise NotImplementedError

    def finish(self, run: ModelRun, plan: Plan):
        """The run's summary, once every pass is written and the ranks'
        shares gathered (on every rank; rank 0 records and evaluates)."""
        raise NotImplementedError


def run(samples, model: str, field: str, task: Task, request: ModelRequest,
        options: RunOptions, progress=None):
    """Runs ``model`` over the samples as ``task`` says.

    Args:
        samples: a dataset, view, or dataset name
        model: a model spec (:mod:`imagenetx.models.sources`)
        field: the field named by the caller (the task says what it writes)
        task: a :class:`Task`
        request: which model is loaded and how
        options: how the run goes
        progress (None): whether to render a progress bar (True/False), use
            ``fo.config.show_progress_bars`` (None), or a callback that
            receives a ``fiftyone.core.utils.ProgressBar``

    Returns:
        the task's summary

    Raises:
        ImageNetXError: before any image is read or anything written, for
            a bad option, model spec, checkpoint or field
    """
    target = task.target(field)
    samples = task.select(get_dataset(samples), field)
    dataset = samples._dataset
    options.check()
    benchmark = get_benchmark(dataset)
    request = request.with_classes(benchmark.output_classes)
    request, options, protocol = resolve_run(benchmark.name, request, options, dataset.name)
    check_dataset(protocol, samples)
    check_request(model, request)  # before the slow imports
    at = place(options)
    # one run per field at a time: claimed before the model loads, released at the end
    with claim_field(dataset, task.claims(field), task.describe(model), at.ranks) as claim, \
            contextlib.ExitStack() as stack:
        classifier = load_model(model, request)
        protocol, amp = settle_run(protocol, classifier, request, options.amp, at.device.type)
        at.dtype = amp_dtype(amp, at.device)  # pinned per protocol, model and device
        precision = PRECISIONS[at.dtype]
        tf32 = stack.enter_context(tf32_for(precision))
        protocol = protocol.with_departures(task.departures, task.departure_details)
        if benchmark.keeps_geometry:  # images already at the input size: no zoom
            classifier.preprocessing = without_resize(classifier.preprocessing)
        if benchmark.border_crop:  # a frame round every image (ObjectNet's): cut first
            classifier.preprocessing = with_border_crop(classifier.preprocessing,
                                                        benchmark.border_crop)
        decode_on = at.device if task.decode_on_device else torch.device("cpu")
        reader, gpu_share = crop_reader(classifier, options.decoder, decode_on)
        record = run_record(classifier, {**task.record(), **protocol.record(),
                                         **run_environment(at.device, precision, tf32),
                                         **({"border_crop": benchmark.border_crop}
                                            if benchmark.border_crop else {})})
        if claim.takeovers:
            record["takeovers"] = claim.takeovers
        this = ModelRun(
            samples=samples, dataset=dataset, model=model, field=field, target=target,
            benchmark=benchmark, options=options, protocol=protocol, classifier=classifier,
            placement=at, reader=reader, gpu_share=gpu_share, record=record,
            took_over=claim.took_over, claim=claim, closing=stack)
        claim.check()  # the model may have loaded for minutes
        plan = task.start(this)
        passes = task.passes(this, plan)
        this.started = time.perf_counter()
        if passes:
            total = sum(len(one.paths) for one in passes)
            with progress_bar(total, progress, at.ranks) as pb:
                for one in passes:
                    _run_pass(this, plan, one, pb)
        claim.check()
        _gather(this, plan)
        return task.finish(this, plan)


def _run_pass(run: ModelRun, plan: Plan, one: Pass, pb: fou.ProgressBar) -> None:
    at = run.placement
    batches = iter(make_loader(one.paths, run.reader, at.device, at.batch_size,
                               at.num_workers, run.gpu_share, dataset=one.images))
    inputs = one.inputs or DeviceInputs(at.device, run.reader, one.paths)
    depth = one.depth or max(1, writer.WRITE_EVERY // at.batch_size)
    with writer.BackgroundWrites(run.dataset, _with_errors(run, plan, one.updates), depth,
                                 ready=one.ready, claim=run.claim) as writes:
        stream(batches, inputs, one.compute, writes.put, pb)


def _with_errors(run: ModelRun, plan: Plan, updates: Callable) -> Callable:
    """A pass's updates with the run's error field: each unreadable image's
    reason (the field declared at the first), cleared on a sample read
    since; each failure counted on the plan and shown in the summary."""
    dataset, err, summary = run.dataset, run.err_field, plan.summary

    def with_errors(result) -> dict:
        chunk = updates(result)
        if result.failed and not dataset.has_field(err):
            dataset.add_sample_field(err, fo.StringField)
        if dataset.has_field(err):
            for update in chunk.values():
                update[err] = None
        for pos, message in result.failed:
            chunk.setdefault(plan.ids[pos], {})[err] = message
            if pos not in plan.failed and len(summary.failures) < FAILURES_SHOWN:
                summary.failures.append((plan.paths[pos], message))
            plan.failed[pos] = message
        return chunk

    return with_errors


def _gather(run: ModelRun, plan: Plan) -> None:
    """Once every rank has written its share: the failures of all ranks in
    each rank's summary, each rank's :meth:`Plan.share` in the plan; rank 0
    drops the error field its listing declared if no image failed."""
    summary, ranks = plan.summary, run.ranks
    shares = ranks.gather((len(plan.failed), summary.failures, plan.share()))
    summary.failed = sum(s[0] for s in shares)
    summary.failures = [f for s in shares for f in s[1]][:FAILURES_SHOWN]
    plan.shares = [s[2] for s in shares]
    if ranks.sharded and ranks.main:
        run.claim.check()  # the other ranks' shares were a while in coming
        if run.declared_error and not summary.failed and run.dataset.has_field(run.err_field):
            run.dataset.delete_sample_field(run.err_field)  # declared, never needed


def progress_bar(total: int, progress, ranks: Ranks) -> fou.ProgressBar:
    """A run's progress bar (rank 0's only, in a sharded run); ``progress``
    as in :func:`run`."""
    return fou.ProgressBar(total=total, progress=progress if ranks.main else False)


def stream(batches: Iterable, inputs: Callable, compute: Callable, put: Callable,
           pb: fou.ProgressBar) -> None:
    """Runs every batch through ``inputs`` and ``compute`` and hands each
    result to ``put``, counting its images on ``pb``.

    Args:
        batches: decoded :class:`~imagenetx.models.loader.Batch` es
        inputs: a batch -> ``(positions, images, failures)``
        compute: those -> a result
        put: takes each result (the background writer's ``put``)
        pb: the run's progress bar
    """
    for batch in batches:
        positions, images, failed = inputs(batch)
        put(compute(positions, images, failed))
        pb.update(len(positions) + len(failed))


def run_record(classifier: Classifier, more: Optional[dict] = None) -> dict:
    """What a field's ``info["imagenetx_model"]`` keeps of the run that
    made it: source, output classes, prompts, input size (and ``more``),
    and the model's published top-1 where a table has it
    (:func:`~imagenetx.protocols.published.published_top1`)."""
    record = {"spec": classifier.spec, "source": classifier.source,
              "classes": classifier.classes.name, "probabilities": classifier.probabilities,
              "input_size": list(classifier.preprocessing.input_size),
              **{k: v for k, v in classifier.record.items() if k != "classes"},
              **(more or {})}
    published = published_top1(record) if classifier.classes.is_imagenet else None
    record["published_top1"] = published.to_dict() if published else None
    return record


#: a run's autocast dtype -> its precision as ``amp`` names it (``off``: float32)
PRECISIONS = {None: "off", torch.bfloat16: "bf16", torch.float16: "fp16"}

#: the libraries whose versions a number depends on, by distribution name
LIBRARIES = ("torch", "torchvision", "timm", "open_clip_torch", "transformers", "pillow",
             "numpy", "fiftyone")


def run_environment(device: torch.device, precision: str, tf32: Optional[bool]) -> dict:
    """What a run's numbers depend on besides the model: its precision
    (``off``: float32, ``bf16``, ``fp16``), whether TF32 matrix products were
    allowed (None: not a CUDA run), the device's name and the libraries'
    versions (Pillow's JPEG library too)."""
    import importlib.metadata
    import platform

    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    try:
        from PIL import features

        versions["libjpeg"] = (("libjpeg-turbo " + str(features.version("libjpeg_turbo")))
                               if features.check_feature("libjpeg_turbo")
                               else "libjpeg " + str(features.version("jpg")))
    except Exception:  # an old Pillow without features.version
        pass
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = f"{device.type} ({platform.processor() or platform.machine()})"
    return {"precision": precision, "tf32": tf32, "device_name": name, "versions": versions}


@contextlib.contextmanager
def tf32_for(precision: str) -> Iterator[Optional[bool]]:
    """While inside, on CUDA: TF32 matrix products and convolutions off for
    a float32 run (``precision="off"``; PyTorch allows TF32 convolutions by
    default on Ampere and newer, which is not float32), as they were
    otherwise; restored on the way out. Yields whether TF32 is allowed
    (None without CUDA)."""
    if not torch.cuda.is_available():
        yield None
        return
    was = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    if precision == "off":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    try:
        yield bool(torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = was


def record_differences(stored: dict, new: dict) -> list:
    """The :data:`IDENTITY` parts in which two run records differ (a
    record kept before runs recorded their precision differs in it: its
    predictions' precision is not known)."""
    return [k for k in IDENTITY if new.get(k) != stored.get(k)]


def write_record(dataset, field: str, record: dict) -> None:
    """Keeps a run's record in its field's ``info`` (:data:`INFO_KEY`); the
    ``takeovers`` of the stored record stay with a run that adds to its
    predictions."""
    f = dataset.get_field(field)
    info = dict(f.info or {})
    stored = info.get(INFO_KEY) or {}
    if stored.get("takeovers") and not record_differences(stored, record):
        record = {**record, "takeovers": stored["takeovers"] + [
            t for t in record.get("takeovers", []) if t not in stored["takeovers"]]}
    info[INFO_KEY] = record
    f.info = info
    f.save()
