"""Run an ImageNet classifier over a FiftyOne collection, writing in chunks.

Each predicted sample gets a ``fo.Classification`` in the prediction field:

-   ``label``: the class's unique label (``ClassTable.labels``),
    ``class_index``: its index (0-999)
-   ``confidence``: the softmax probability of that class
-   ``top5`` / ``top5_confidences``: the five best class indices and their
    probabilities, best first
-   ``logits``: the 1000 raw outputs, only with ``logits=True``

On a benchmark with its own answers (the 16 categories of a cue-conflict
dataset: ``Benchmark.decisions``), ``label``, ``class_index`` and
``confidence`` are the decision in those classes instead, and ``top5`` keeps
the 1000-way view.

An image that cannot be read leaves the prediction empty and its reason in
``<field>_error``; the rest of its batch is predicted. Results are written
every few hundred samples, so an interrupted run keeps what was written and
a re-run predicts only the samples still without a prediction. Correctness
is then a FiftyOne evaluation under the eval key ``eval_<field>``
(:func:`imagenetx.store.evaluation.evaluate_predictions`).

Speed: DataLoader workers on every core the process may use decode and crop
the images (:mod:`imagenetx.models.decode`; on a GPU the main process
also decodes a share of each batch there), the model runs on uint8 batches
normalized on its device, and a background thread turns the outputs into
documents and writes them, so neither decoding in the main process nor
the database holds the model up.
"""

import math
import os
import queue
import threading
import time
from dataclasses import dataclass, field as dc_field
from typing import List, NamedTuple, Optional, Sequence

import fiftyone as fo
import fiftyone.core.utils as fou
import torch

from imagenetx.benchmarks import get_benchmark
from imagenetx.classes.decisions import Decisions
from imagenetx.store.bulk import write_raw
from imagenetx.store.datasets import all_slices, get_dataset
from imagenetx.store.evaluation import (
    Written,
    can_write_with_predictions,
    evaluate_predictions,
)
from imagenetx.errors import ImageNetXError
from imagenetx.classes.imagenet import class_table
from imagenetx.models.decode import (
    DECODERS,
    CropReader,
    Geometry,
    decodable,
    decode_batch,
    resolve_decoder,
)
from imagenetx.models.distributed import join, pick
from imagenetx.models.specs import LoadedModel, load_model, parse_spec
from imagenetx.options import AMPS, DEVICES
from imagenetx.store.schema import (
    check_prediction_field,
    eval_key_of,
    declare_classification,
    raw_classification,
)

#: images per forward pass on the CPU (measured: larger batches are no
#: faster there) and on a GPU
DEFAULT_BATCH_SIZE = 64
CUDA_BATCH_SIZE = 256
#: batches each DataLoader worker keeps decoded ahead
PREFETCH_FACTOR = 4
#: on a GPU, the share of each batch's JPEGs decoded there (the CPU
#: workers decode the rest at the same time)
GPU_DECODE_SHARE = 0.5

#: samples per database write: an interrupted run loses at most this many
WRITE_EVERY = 512
#: and at most this many seconds of work, on slow devices
WRITE_SECONDS = 10.0
TOP_K = 5
#: failures listed by name in the summary
FAILURES_SHOWN = 5


@dataclass
class PredictSummary:
    """What :func:`predict` did."""

    dataset: str
    field: str
    model: str
    device: str
    samples: int
    already_predicted: int = 0
    predicted: int = 0
    failed: int = 0
    failures: list = dc_field(default_factory=list)
    seconds: float = 0.0
    eval_key: Optional[str] = None
    evaluated: int = 0
    accuracy: Optional[float] = None
    eval_note: Optional[str] = None
    #: samples predicted by each rank of a sharded run (torchrun)
    per_rank: list = dc_field(default_factory=list)

    @property
    def images_per_second(self) -> float:
        return self.predicted / self.seconds if self.seconds else 0.0

    def __str__(self):
        lines = [
            f"Dataset '{self.dataset}', field '{self.field}', model "
            f"'{self.model}' on {self.device}: {self.samples:,} samples, "
            f"{self.predicted:,} predicted ({self.images_per_second:.1f} "
            f"images/s), {self.already_predicted:,} already predicted "
            f"(left alone), {self.failed:,} unreadable"
        ]
        if len(self.per_rank) > 1:
            lines.append(f"{len(self.per_rank)} ranks predicted "
                         + " + ".join(f"{n:,}" for n in self.per_rank))
        if self.failed:
            lines.append(
                f"Unreadable images are recorded in '{error_field(self.field)}'"
                ", e.g. " + "; ".join(f"{p}: {m}" for p, m in self.failures)
            )
        if self.eval_note:
            lines.append(self.eval_note)
        if self.accuracy is not None:
            lines.append(
                f"Evaluation '{self.eval_key}' against ground truth: accuracy "
                f"{self.accuracy:.4f} over {self.evaluated:,} samples"
            )
        return "\n".join(lines)


def error_field(field: str) -> str:
    """The field that records why a sample's image could not be read."""
    return f"{field}_error"


def predict(
    samples,
    model: str,
    field: str,
    arch: Optional[str] = None,
    batch_size: Optional[int] = None,
    num_workers: Optional[int] = None,
    device: str = "auto",
    amp: str = "auto",
    compile: bool = False,
    decoder: str = "auto",
    logits: bool = False,
    limit: Optional[int] = None,
    overwrite: bool = False,
    gt_field: str = "ground_truth",
    pretrained: bool = True,
    remap_by_position: bool = False,
    progress=None,
    slices: Optional[Sequence[str]] = None,
) -> PredictSummary:
    """Predicts the ImageNet class of the samples' images.

    Args:
        samples: a dataset, view, or dataset name
        model: ``timm:NAME``, ``torchvision:NAME[:WEIGHTS]`` or
            ``checkpoint:PATH`` (see :mod:`imagenetx.models.specs`)
        field: the ``fo.Classification`` field to write
        arch (None): the architecture of a ``checkpoint:`` model
        batch_size (None): images per forward pass; None: 256 on a GPU,
            64 on the CPU
        num_workers (None): DataLoader worker processes decoding images;
            None: one per CPU core this process may use
            (``os.sched_getaffinity``)
        device ("auto"): ``"cuda"`` when available, else ``"cpu"``
        amp ("auto"): autocast dtype, ``"bf16"``, ``"fp16"`` or ``"off"``;
            ``"auto"`` is bf16 (fp16 on older GPUs) on CUDA and off on CPU
        compile (False): whether to ``torch.compile`` the model (pays on
            long GPU runs; see the README for the CPU figures)
        decoder ("auto"): ``"pil"``, ``"torchvision"`` or ``"auto"`` (see
            :mod:`imagenetx.models.decode`)
        logits (False): whether to store the 1000 logits (always on a
            benchmark that scores them, such as ImageNet-A/R)
        limit (None): predict at most this many samples
        overwrite (False): predict all samples, not only those without a
            prediction
        gt_field ("ground_truth"): the ground truth for the evaluation,
            skipped when the dataset has no such field
        pretrained (True): False loads random weights (throughput tests)
        remap_by_position (False): load a ``checkpoint:`` state dict whose
            key names differ from ``arch``'s by position, when its tensors
            line up one to one in order and shape
        progress (None): whether to render a progress bar (True/False), use
            ``fo.config.show_progress_bars`` (None), or a callback that
            receives a ``fiftyone.core.utils.ProgressBar``
        slices (None): on a grouped dataset, the group slices to predict;
            None: all of them (see :func:`group_slices_of`)

    Returns:
        a :class:`PredictSummary`

    Raises:
        ImageNetXError: before any image is read or anything written, for
            a bad option, model spec, checkpoint or field
    """
    samples = group_slices_of(get_dataset(samples), slices)
    dataset = samples._dataset
    _check_options(dataset, field, gt_field, batch_size, num_workers, limit)
    check_decoder(decoder)
    parse_spec(model, arch, remap_by_position)  # syntax, before the slow imports
    ranks = join(device)  # under torchrun: this rank's share, its GPU
    dev = ranks.device(_device(device))
    dtype = _amp_dtype(amp, dev)
    batch_size = batch_size or default_batch_size(dev)
    if num_workers is None:
        num_workers = ranks.workers(default_workers())
    loaded = load_model(
        model, arch, pretrained=pretrained, remap_by_position=remap_by_position
    )
    reader, gpu_share = _reader(loaded, decoder, dev)
    benchmark = get_benchmark(dataset)
    decisions = benchmark.decisions()
    logits = logits or benchmark.needs_logits

    err_field = error_field(field)
    has_errors = dataset.has_field(err_field)
    pending = samples
    if dataset.has_field(field) and not overwrite:
        pending = samples.exists(field, False)
    todo = pending.limit(limit) if limit is not None else pending
    # with a classification ground truth, each prediction's eval_<field>
    # value is written with it, so the evaluation after the run writes none
    previous = can_write_with_predictions(dataset, field, gt_field)
    truth = [f"{gt_field}.label", f"{gt_field}._id"] if previous is not None else []
    eval_key = eval_key_of(field)
    listed = None
    if ranks.main:  # one list for all ranks, read and declared before any writes
        columns = todo.values(
            ["_id", "filepath"] + truth + ([err_field] if has_errors else []), _raw=True
        )
        known = set(decisions.labels if decisions else class_table().labels)
        evaluable = bool(truth) and known.issuperset(
            x for x in columns[2] if x is not None)  # else the evaluation says why
        declared = False
        if columns[0]:
            _declare_prediction_field(dataset, field)
            if evaluable and not dataset.has_field(eval_key):
                dataset.add_sample_field(eval_key, fo.BooleanField)
                declared = True
            if ranks.sharded and not has_errors:  # not by two ranks at once
                dataset.add_sample_field(err_field, fo.StringField)
        listed = columns, len(samples), len(pending), evaluable, declared
    columns, n_samples, n_pending, evaluable, declared = ranks.agree(listed)
    if not ranks.main:
        dataset.reload()  # the fields rank 0 declared
    columns = [pick(c, ranks.share(len(columns[0]))) for c in columns]
    ids, paths = columns[0], columns[1]
    old_errors = columns[-1] if has_errors else [None] * len(ids)
    gt = (columns[2], columns[3]) if evaluable else None

    summary = PredictSummary(
        dataset=dataset.name,
        field=field,
        model=model,
        device=str(dev),
        samples=n_samples,
    )
    if pending is not samples:
        summary.already_predicted = summary.samples - n_pending

    start = time.perf_counter()
    if ids:
        # the workers start decoding while the model moves to its device
        batches = iter(_loader(paths, reader, dev, batch_size, num_workers,
                               gpu_share))
        runner = _Runner(loaded, dev, dtype, compile, batch_size, logits,
                         decisions, reader=reader, paths=paths)
        builder = _Builder(dataset, field, ids, paths, old_errors, summary,
                           decisions, gt=gt, eval_key=eval_key)
        with fou.ProgressBar(total=len(ids), progress=progress if ranks.main else False) as pb, \
                _BackgroundWrites(dataset, builder,
                                  max(1, WRITE_EVERY // batch_size)) as writes:
            for result in runner.run(batches):
                writes.put(result)
                pb.update(len(result.positions) + len(result.failed))
    outcomes = builder.columns if ids and gt else None
    if ranks.sharded:
        outcomes = _gather(ranks, summary, outcomes)
        if not ranks.main:
            return summary  # this rank's share; rank 0 evaluates
        if not has_errors and not summary.failed and dataset.has_field(err_field):
            dataset.delete_sample_field(err_field)  # declared, never needed
    if summary.predicted or summary.failed:
        benchmark.predictions_written(dataset, field)
    summary.seconds = time.perf_counter() - start

    # an unreadable image clears an old prediction only with --overwrite
    changed = summary.predicted > 0 or (overwrite and summary.failed > 0)
    written = Written(outcomes, previous) if outcomes is not None else None
    _evaluate(dataset, field, gt_field, summary, changed=changed,
              labels=decisions.labels if decisions else None, written=written)
    if declared and not dataset.has_evaluation(eval_key):
        dataset.delete_sample_field(eval_key)  # values of no evaluation
    return summary


def _gather(ranks, summary: PredictSummary, outcomes: Optional[list]):
    """After every rank has written its share: the run's totals in rank 0's
    ``summary``, and the evaluation columns of all ranks (None if none)."""
    shares = ranks.gather((summary.predicted, summary.failed, summary.failures,
                           outcomes))
    summary.per_rank = [s[0] for s in shares]
    summary.predicted = sum(s[0] for s in shares)
    summary.failed = sum(s[1] for s in shares)
    summary.failures = [f for s in shares for f in s[2]][:FAILURES_SHOWN]
    parts = [s[3] for s in shares if s[3] is not None]
    if not parts:
        return None
    # the shares are contiguous: in rank order, the run's order
    return [sum((p[c] for p in parts), []) for c in range(5)]


def group_slices_of(samples, slices: Optional[Sequence[str]] = None):
    """The samples to predict: on a grouped collection, those of all its
    group slices (or of the ``slices`` named), flattened; else ``samples``.

    Raises:
        ImageNetXError: for ``slices`` of a collection that is not grouped,
            or a name that is not one of its slices
    """
    if not slices:
        return all_slices(samples)
    if samples.media_type != "group":
        raise ImageNetXError(
            f"Dataset '{samples._dataset.name}' is not grouped: --slices names "
            "group slices; leave it out")
    known = samples._dataset.group_slices
    unknown = [s for s in slices if s not in known]
    if unknown:
        raise ImageNetXError(
            f"Unknown group slice '{unknown[0]}' of dataset "
            f"'{samples._dataset.name}': its slices are {', '.join(known)}")
    return all_slices(samples, list(slices))


def default_batch_size(device: torch.device) -> int:
    """Images per forward pass when none is given: 256 on a GPU, 64 on the
    CPU."""
    return CUDA_BATCH_SIZE if device.type == "cuda" else DEFAULT_BATCH_SIZE


def default_workers() -> int:
    """Decoding processes when none are given: one per CPU core this
    process may run on (its affinity, which containers and ``taskset``
    narrow), not every core of the machine."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def check_decoder(decoder: str) -> None:
    """Raises ImageNetXError for an unknown ``--decoder``."""
    if decoder not in DECODERS:
        raise ImageNetXError(
            f"Unknown --decoder '{decoder}': use one of {', '.join(DECODERS)}")


def _reader(loaded: LoadedModel, decoder: str, device) -> tuple:
    """The workers' :class:`CropReader` for ``decoder``, and the share of
    each batch decoded on the GPU (0 on the CPU, with ``pil``, and for a
    geometry tensors cannot reproduce)."""
    prep = loaded.preprocessing
    geometry = Geometry.of(prep.geometry)
    try:
        kind = resolve_decoder(decoder, geometry)
    except ValueError as e:
        raise ImageNetXError(f"--decoder {decoder}: {e}") from None
    share = GPU_DECODE_SHARE if (
        decoder == "auto" and kind == "torchvision" and device.type == "cuda"
    ) else 0.0
    return CropReader(prep.geometry, geometry, kind), share


def _check_options(dataset, field, gt_field, batch_size, num_workers, limit):
    check_prediction_field(dataset, field, gt_field)
    if batch_size is not None and batch_size < 1:
        raise ImageNetXError(f"--batch-size must be at least 1, not {batch_size}")
    if num_workers is not None and num_workers < 0:
        raise ImageNetXError(
            f"--num-workers must be 0 or more, not {num_workers}"
        )
    if limit is not None and limit < 0:
        raise ImageNetXError(f"--limit must be 0 or more, not {limit}")


def _device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.split(":")[0] not in DEVICES[1:]:
        raise ImageNetXError(
            f"Unknown device '{device}': use auto, cpu or cuda (cuda:N)"
        )
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ImageNetXError(
            f"--device {device} but PyTorch sees no CUDA GPU: use --device "
            "cpu (or auto)"
        )
    return torch.device(device)


def _amp_dtype(amp: str, device: torch.device) -> Optional[torch.dtype]:
    if amp not in AMPS:
        raise ImageNetXError(
            f"Unknown --amp '{amp}': use one of {', '.join(AMPS)}"
        )
    if amp == "auto":
        if device.type != "cuda":
            return None
        return (
            torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        )
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "off": None}[amp]


def _declare_prediction_field(dataset, field):
    declare_classification(dataset, field)
    # confidence and logits are built into fo.Classification
    for attr, sub in (("top5", fo.IntField), ("top5_confidences", fo.FloatField)):
        if not dataset.has_field(f"{field}.{attr}"):
            dataset.add_sample_field(f"{field}.{attr}", fo.ListField, subfield=sub)


def error_message(e: Exception) -> str:
    """How a per-image failure is recorded: ``"Type: message"``."""
    return f"{type(e).__name__}: {e}"


class ImageFiles(torch.utils.data.Dataset):
    """Image files -> ``(position, uint8 crop or None, encoded bytes or None,
    error message or None)``.

    Args:
        paths: the image files
        reader: decodes a path into the model's uint8 ``(3, h, w)`` crop
        raw_share (0.0): the share of positions whose JPEG bytes are handed
            over undecoded, for :func:`~imagenetx.models.decode.decode_batch`
            on the GPU (a file that is not a plain JPEG is decoded here
            anyway)
    """

    def __init__(self, paths: list, reader: CropReader, raw_share: float = 0.0):
        self.paths = paths
        self.reader = reader
        self.raw_share = raw_share

    def __len__(self):
        return len(self.paths)

    def _raw_slot(self, i: int) -> bool:
        # spread evenly: floor((i + 1) * share) steps up at raw positions
        return int((i + 1) * self.raw_share) > int(i * self.raw_share)

    def __getitem__(self, i):
        try:
            if self.raw_share and self._raw_slot(i):
                data = self.reader.read(self.paths[i])
                if decodable(data):
                    return i, None, data, None
                return i, self.reader(self.paths[i], data), None, None
            return i, self.reader(self.paths[i]), None, None
        except Exception as e:  # any decode error costs only this image
            return i, None, None, error_message(e)


class Batch(NamedTuple):
    """One collated batch of :class:`ImageFiles` items.

    Attributes:
        positions: the positions of the rows of ``images``
        images: uint8 ``(n, 3, h, w)`` crops, None when there are none
        failed: ``[(position, message), ...]`` of unreadable images
        raw_positions: the positions of the encoded JPEGs in ``raw``
        raw: their bytes, concatenated into one uint8 tensor (one shared
            memory handle per batch: a tensor per image exhausts file
            descriptors), None when there are none
        raw_sizes: their lengths in ``raw``
    """

    positions: torch.Tensor
    images: Optional[torch.Tensor]
    failed: list
    raw_positions: tuple = ()
    raw: Optional[torch.Tensor] = None
    raw_sizes: tuple = ()

    def encoded(self) -> List[torch.Tensor]:
        """Each encoded JPEG, as a 1-D view of ``raw``."""
        if self.raw is None:
            return []
        return list(torch.split(self.raw, list(self.raw_sizes)))


def collate_images(items: list) -> Batch:
    """Stacks the decoded crops of a batch, concatenates its encoded JPEGs
    and sets the failures aside."""
    crops = [(i, x) for i, x, _, err in items if x is not None]
    raw = [(i, data) for i, _, data, _ in items if data is not None]
    failed = [(i, err) for i, _, _, err in items if err is not None]
    positions = torch.tensor([i for i, _ in crops], dtype=torch.long)
    # stacked straight into shared memory in a worker
    images = torch.stack([x for _, x in crops]) if crops else None
    blob = None
    if raw:
        blob = torch.frombuffer(bytearray(b"".join(d for _, d in raw)),
                                dtype=torch.uint8)
    return Batch(positions, images, failed, tuple(i for i, _ in raw), blob,
                 tuple(len(d) for _, d in raw))


def _loader(paths, reader: CropReader, device, batch_size, num_workers,
            raw_share: float = 0.0):
    if num_workers is None:
        num_workers = default_workers()
    num_workers = min(num_workers, math.ceil(len(paths) / batch_size))
    # uint8 crops cross process and bus (4x smaller than floats) and are
    # normalized on the model's device
    return torch.utils.data.DataLoader(
        ImageFiles(paths, reader, raw_share),
        batch_size=batch_size,
        shuffle=False,
        num_workers=num_workers,
        collate_fn=collate_images,
        pin_memory=device.type == "cuda",
        prefetch_factor=PREFETCH_FACTOR if num_workers else None,
    )


class Result(NamedTuple):
    """One batch's outputs, on the CPU: top-5 ``idx`` and ``conf``, the
    ``logits`` when kept, the ``decided`` ``(n, 2)`` index and score in a
    benchmark's own classes when it has them; ``event`` to wait on before
    reading them (None on the CPU)."""

    positions: torch.Tensor
    idx: Optional[torch.Tensor]
    conf: Optional[torch.Tensor]
    logits: Optional[torch.Tensor]
    decided: Optional[torch.Tensor]
    failed: list
    event: Optional[object] = None

    def ready(self) -> "Result":
        """The same, once the device has written it."""
        if self.event is not None:
            self.event.synchronize()
        return self._replace(event=None)


class _Runner:
    """Runs batches through the model; yields a :class:`Result` per batch.

    On a GPU, results are copied back without blocking; the thread that
    writes them waits for them (:meth:`Result.ready`), so the device never
    waits for Python. The encoded JPEGs of a batch are decoded, resized and
    cropped on the device (:func:`~imagenetx.models.decode.decode_batch`);
    those it refuses are decoded here on the CPU.
    """

    def __init__(self, loaded, device, dtype, compile, batch_size, logits,
                 decisions: Optional[Decisions] = None,
                 reader: Optional[CropReader] = None, paths=None):
        self.device = device
        self.decision_matrix = None if decisions is None else torch.as_tensor(
            decisions.matrix, device=device)
        self.logits = logits
        self.dtype = dtype
        self.batch_size = batch_size
        self.cuda = device.type == "cuda"
        self.reader = reader
        self.paths = paths
        self.normalize = loaded.preprocessing.normalizer(device)
        model = loaded.model.to(device, memory_format=torch.channels_last)
        self.pad = compile  # fixed batch shape: no recompiles
        self.model = torch.compile(model) if compile else model

    def inputs(self, batch: Batch) -> tuple:
        """``(positions, uint8 images on the device or None, failures)``:
        the workers' crops and the device's decodes of the encoded JPEGs."""
        positions = [batch.positions]
        parts = [] if batch.images is None else [
            batch.images.to(self.device, non_blocking=True)]
        failed = list(batch.failed)
        if batch.raw_positions:
            encoded = batch.encoded()
            crops, refused = decode_batch(encoded, self.reader.geometry, self.device)
            refused_set = set(refused)
            if crops is not None:
                parts.append(crops)
                positions.append(torch.tensor(
                    [p for k, p in enumerate(batch.raw_positions) if k not in refused_set],
                    dtype=torch.long))
            for k in refused:
                pos = batch.raw_positions[k]
                try:
                    crop = self.reader(self.paths[pos], encoded[k].numpy().tobytes())
                except Exception as e:  # costs only this image
                    failed.append((pos, error_message(e)))
                    continue
                parts.append(crop[None].to(self.device))
                positions.append(torch.tensor([pos], dtype=torch.long))
        images = torch.cat(parts) if parts else None
        return torch.cat(positions), images, failed

    def _forward(self, batch):
        n = batch.shape[0]
        if self.pad and n < self.batch_size:
            fill = batch.new_zeros((self.batch_size - n, *batch.shape[1:]))
            batch = torch.cat([batch, fill])
        x = self.normalize(batch)
        x = x.contiguous(memory_format=torch.channels_last)
        with torch.inference_mode(), torch.autocast(
            self.device.type, dtype=self.dtype, enabled=self.dtype is not None
        ):
            out = self.model(x)
            if isinstance(out, (tuple, list)):
                out = out[0]
            out = out[:n].float()
            probs = out.softmax(dim=1)
            conf, idx = probs.topk(TOP_K, dim=1)
            decided = None
            if self.decision_matrix is not None:
                # in float32, outside autocast: a decision is an argmax
                with torch.autocast(self.device.type, enabled=False):
                    decided = (probs @ self.decision_matrix).max(dim=1)
                decided = torch.stack([decided.indices.float(), decided.values], 1)
        return idx, conf, out if self.logits else None, decided

    def run(self, loader):
        for batch in loader:
            positions, images, failed = self.inputs(batch)
            if images is None:
                yield Result(positions, None, None, None, None, failed)
                continue
            idx, conf, out, decided = [
                None if t is None else t.to("cpu", non_blocking=True)
                for t in self._forward(images)
            ]
            event = None
            if self.cuda:
                event = torch.cuda.Event()
                event.record()
            yield Result(positions, idx, conf, out, decided, failed, event)


#: tells the writing thread that no more results come
_DONE = object()


class _BackgroundWrites:
    """Builds documents from results and writes them in a thread, behind a
    queue of at most ``depth`` results, so the model never waits for the
    database (unless the database falls that far behind).

    A clean exit, or an exception in the caller, writes every result put so
    far; a killed process loses the queued results and the chunk being
    filled (the run resumes from what was written). An error in the thread
    is raised in the caller at its next :meth:`put` or at the exit.
    """

    def __init__(self, dataset, builder: "_Builder", depth: int):
        self.dataset = dataset
        self.builder = builder
        self.queue = queue.Queue(maxsize=depth)
        self.error = None
        self.thread = threading.Thread(target=self._write, name="imagenetx-writes",
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def _results(self):
        while True:
            item = self.queue.get()
            if item is _DONE:
                return
            yield item.ready()

    def _write(self):
        try:
            write_raw(self.dataset, _chunks(self._results(), self.builder))
        except BaseException as e:  # raised in the caller
            self.error = e
            while self.queue.get() is not _DONE:  # unblock the caller
                pass

    def put(self, result: Result) -> None:
        """Queues a result, waiting while the queue is full."""
        self._raise()
        self.queue.put(result)

    def _raise(self):
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def __exit__(self, kind, value, tb):
        self.queue.put(_DONE)
        self.thread.join()
        if kind is None:
            self._raise()
        return False


class _Builder:
    """Turns model outputs into stored ``fo.Classification`` documents."""

    def __init__(self, dataset, field, ids, paths, old_errors, summary,
                 decisions: Optional[Decisions] = None, gt=None,
                 eval_key: Optional[str] = None):
        self.dataset = dataset
        # (labels, label ids) of the ground truth per position: each update
        # then carries eval_key, and the evaluation's columns are kept
        self.gt = gt
        self.eval_key = eval_key
        self.outcomes = {}  # position -> (gt label, gt id, label, id, confidence)
        self.field = field
        self.err_field = error_field(field)
        self.ids = ids
        self.paths = paths
        self.old_errors = old_errors
        self.summary = summary
        self.labels = class_table().labels
        self.decided_labels = decisions.labels if decisions else None
        self.vector = fo.VectorField()

    def updates(self, positions, idx, conf, out, decided, failed) -> dict:
        updates = {}
        labels = self.labels
        if idx is not None:
            idx_rows = idx.tolist()
            conf_rows = conf.tolist()
            logit_rows = out.numpy() if out is not None else None
            decided_rows = decided.tolist() if decided is not None else None
            for row, pos in enumerate(positions.tolist()):
                top5 = idx_rows[row]
                extra = {}
                if logit_rows is not None:
                    extra["logits"] = self.vector.to_mongo(logit_rows[row])
                if decided_rows is None:
                    label, index, confidence = labels[top5[0]], top5[0], conf_rows[row][0]
                else:
                    index, confidence = int(decided_rows[row][0]), decided_rows[row][1]
                    label = self.decided_labels[index]
                update = {
                    self.field: raw_classification(
                        label,
                        index,
                        confidence=confidence,
                        top5=top5,
                        top5_confidences=conf_rows[row],
                        **extra,
                    )
                }
                if self.old_errors[pos] is not None:
                    update[self.err_field] = None
                if self.gt is not None and self.gt[0][pos] is not None:
                    truth = self.gt[0][pos]
                    update[self.eval_key] = truth == label
                    self.outcomes[pos] = (truth, str(self.gt[1][pos]), label,
                                          str(update[self.field]["_id"]), confidence)
                updates[self.ids[pos]] = update
            self.summary.predicted += len(idx_rows)
        if failed and not self.dataset.has_field(self.err_field):
            self.dataset.add_sample_field(self.err_field, fo.StringField)
        for pos, message in failed:
            updates[self.ids[pos]] = {self.field: None, self.err_field: message}
            if self.gt is not None:  # no prediction: no outcome
                updates[self.ids[pos]][self.eval_key] = None
            if len(self.summary.failures) < FAILURES_SHOWN:
                self.summary.failures.append((self.paths[pos], message))
        self.summary.failed += len(failed)
        return updates

    @property
    def columns(self) -> list:
        """``[ytrue, ytrue_ids, ypred, ypred_ids, confs]`` of the samples
        written with a ground truth, in the order of the run."""
        rows = [self.outcomes[pos] for pos in sorted(self.outcomes)]
        return [list(c) for c in zip(*rows)] if rows else [[], [], [], [], []]


def _chunks(results, builder: _Builder):
    """Groups updates into chunks of :data:`WRITE_EVERY` samples, or of
    :data:`WRITE_SECONDS` of work, whichever comes first."""
    chunk = {}
    last = time.monotonic()
    for result in results:
        updates = builder.updates(*result[:6])
        chunk.update(updates)
        if len(chunk) >= WRITE_EVERY or time.monotonic() - last >= WRITE_SECONDS:
            yield chunk
            chunk = {}
            last = time.monotonic()
    if chunk:
        yield chunk


def _evaluate(dataset, field, gt_field, summary, changed: bool, labels=None,
              written: Optional[Written] = None):
    evaluation = evaluate_predictions(dataset, field, gt_field, rerun=changed,
                                      labels=labels, written=written)
    summary.eval_note = evaluation.note
    if evaluation.key is not None:
        summary.eval_key = evaluation.key
        summary.evaluated = evaluation.evaluated
        summary.accuracy = evaluation.accuracy
