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
then goes through FiftyOne's ``evaluate_classifications`` under the eval
key ``eval_<field>``.
"""

import math
import os
import time
from dataclasses import dataclass, field as dc_field
from typing import Callable, Optional, Sequence

import fiftyone as fo
import fiftyone.core.utils as fou
import torch
from PIL import Image
from torch.utils.data import default_collate

from imagenetx.benchmarks import get_benchmark
from imagenetx.classes.decisions import Decisions
from imagenetx.store.bulk import write_raw
from imagenetx.store.datasets import all_slices, get_dataset
from imagenetx.store.evaluation import evaluate_predictions
from imagenetx.errors import ImageNetXError
from imagenetx.classes.imagenet import class_table
from imagenetx.models.specs import LoadedModel, load_model, parse_spec
from imagenetx.options import AMPS, DEVICES
from imagenetx.store.schema import (
    check_prediction_field,
    declare_classification,
    raw_classification,
)

DEFAULT_BATCH_SIZE = 64

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
    batch_size: int = DEFAULT_BATCH_SIZE,
    num_workers: Optional[int] = None,
    device: str = "auto",
    amp: str = "auto",
    compile: bool = False,
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
        batch_size (64): images per forward pass
        num_workers (None): DataLoader worker processes decoding images; by
            default one per CPU core, at most 8
        device ("auto"): ``"cuda"`` when available, else ``"cpu"``
        amp ("auto"): autocast dtype, ``"bf16"``, ``"fp16"`` or ``"off"``;
            ``"auto"`` is bf16 (fp16 on older GPUs) on CUDA and off on CPU
        compile (False): whether to ``torch.compile`` the model
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
    parse_spec(model, arch, remap_by_position)  # syntax, before the slow imports
    dev = _device(device)
    dtype = _amp_dtype(amp, dev)
    loaded = load_model(
        model, arch, pretrained=pretrained, remap_by_position=remap_by_position
    )
    benchmark = get_benchmark(dataset)
    decisions = benchmark.decisions()
    logits = logits or benchmark.needs_logits

    err_field = error_field(field)
    has_errors = dataset.has_field(err_field)
    pending = samples
    if dataset.has_field(field) and not overwrite:
        pending = samples.exists(field, False)
    todo = pending.limit(limit) if limit is not None else pending
    columns = todo.values(
        ["_id", "filepath"] + ([err_field] if has_errors else []), _raw=True
    )
    ids, paths = columns[0], columns[1]
    old_errors = columns[2] if has_errors else [None] * len(ids)

    summary = PredictSummary(
        dataset=dataset.name,
        field=field,
        model=model,
        device=str(dev),
        samples=len(samples),
    )
    if pending is not samples:
        summary.already_predicted = summary.samples - len(pending)

    start = time.perf_counter()
    if ids:
        _declare_prediction_field(dataset, field)
        runner = _Runner(loaded, dev, dtype, compile, batch_size, logits, decisions)
        loader = _loader(paths, loaded, dev, batch_size, num_workers)
        builder = _Builder(dataset, field, ids, paths, old_errors, summary,
                           decisions)
        with fou.ProgressBar(total=len(ids), progress=progress) as pb:
            write_raw(dataset, _chunks(runner.run(loader), builder, pb))
        benchmark.predictions_written(dataset, field)
    summary.seconds = time.perf_counter() - start

    _evaluate(dataset, field, gt_field, summary, changed=bool(ids),
              labels=decisions.labels if decisions else None)
    return summary


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


def _check_options(dataset, field, gt_field, batch_size, num_workers, limit):
    check_prediction_field(dataset, field, gt_field)
    if batch_size < 1:
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


class ImageFiles(torch.utils.data.Dataset):
    """Image files -> ``(position, tensor or None, error message or None)``."""

    def __init__(self, paths: list, transform: Callable):
        self.paths = paths
        self.transform = transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        try:
            with Image.open(self.paths[i]) as img:
                return i, self.transform(img.convert("RGB")), None
        except Exception as e:  # any decode error costs only this image
            return i, None, f"{type(e).__name__}: {e}"


def collate_images(items: list) -> tuple:
    """Stacks the readable images of a batch and sets the failures aside.

    Returns:
        ``(positions, batch or None, [(position, message), ...])``
    """
    good = [(i, x) for i, x, err in items if err is None]
    failed = [(i, err) for i, _, err in items if err is not None]
    positions = torch.tensor([i for i, _ in good], dtype=torch.long)
    # default_collate stacks straight into shared memory in a worker
    batch = default_collate([x for _, x in good]) if good else None
    return positions, batch, failed


def _loader(paths, loaded: LoadedModel, device, batch_size, num_workers):
    if num_workers is None:
        num_workers = min(8, os.cpu_count() or 1)
    num_workers = min(num_workers, math.ceil(len(paths) / batch_size))
    cuda = device.type == "cuda"
    # on a GPU, uint8 batches cross the bus (4x smaller) and are normalized
    # there; on the CPU the workers normalize
    transform = loaded.preprocessing.transform(normalize=not cuda)
    return torch.utils.data.DataLoader(
        ImageFiles(paths, transform),
        batch_size=batch_size,
        shuffle=False,
        num_workers=num_workers,
        collate_fn=collate_images,
        pin_memory=cuda,
    )


class _Runner:
    """Runs batches through the model; yields ``(positions, top5 indices,
    top5 probabilities, logits, decisions, failures)`` on the CPU
    (decisions: ``(n, 2)`` index and score in the benchmark's classes, when
    it has its own).

    On a GPU, the results of batch k are copied back without blocking and
    read only after batch k+1 is queued, so the device never waits for
    Python.
    """

    def __init__(self, loaded, device, dtype, compile, batch_size, logits,
                 decisions: Optional[Decisions] = None):
        self.device = device
        self.decision_matrix = None if decisions is None else torch.as_tensor(
            decisions.matrix, device=device)
        self.logits = logits
        self.dtype = dtype
        self.batch_size = batch_size
        self.cuda = device.type == "cuda"
        self.normalize = loaded.preprocessing.normalizer(device)
        model = loaded.model.to(device, memory_format=torch.channels_last)
        self.pad = compile  # fixed batch shape: no recompiles
        self.model = torch.compile(model) if compile else model

    def _forward(self, batch):
        n = batch.shape[0]
        if self.pad and n < self.batch_size:
            fill = batch.new_zeros((self.batch_size - n, *batch.shape[1:]))
            batch = torch.cat([batch, fill])
        x = batch.to(self.device, non_blocking=True)
        if self.cuda:
            x = self.normalize(x)
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
        pending = None
        for positions, batch, failed in loader:
            current = (positions, None, failed)
            if batch is not None:
                copies = [
                    None if t is None else t.to("cpu", non_blocking=True)
                    for t in self._forward(batch)
                ]
                event = None
                if self.cuda:
                    event = torch.cuda.Event()
                    event.record()
                current = (positions, (copies, event), failed)
            if pending is not None:
                yield self._finish(pending)
            pending = current
        if pending is not None:
            yield self._finish(pending)

    @staticmethod
    def _finish(item):
        positions, result, failed = item
        if result is None:
            return positions, None, None, None, None, failed
        (idx, conf, out, decided), event = result
        if event is not None:
            event.synchronize()
        return positions, idx, conf, out, decided, failed


class _Builder:
    """Turns model outputs into stored ``fo.Classification`` documents."""

    def __init__(self, dataset, field, ids, paths, old_errors, summary,
                 decisions: Optional[Decisions] = None):
        self.dataset = dataset
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
                updates[self.ids[pos]] = update
            self.summary.predicted += len(idx_rows)
        if failed and not self.dataset.has_field(self.err_field):
            self.dataset.add_sample_field(self.err_field, fo.StringField)
        for pos, message in failed:
            updates[self.ids[pos]] = {self.field: None, self.err_field: message}
            if len(self.summary.failures) < FAILURES_SHOWN:
                self.summary.failures.append((self.paths[pos], message))
        self.summary.failed += len(failed)
        return updates


def _chunks(results, builder: _Builder, pb):
    """Groups updates into chunks of :data:`WRITE_EVERY` samples, or of
    :data:`WRITE_SECONDS` of work, whichever comes first."""
    chunk = {}
    last = time.monotonic()
    for result in results:
        updates = builder.updates(*result)
        chunk.update(updates)
        pb.update(len(updates))
        if len(chunk) >= WRITE_EVERY or time.monotonic() - last >= WRITE_SECONDS:
            yield chunk
            chunk = {}
            last = time.monotonic()
    if chunk:
        yield chunk


def _evaluate(dataset, field, gt_field, summary, changed: bool, labels=None):
    evaluation = evaluate_predictions(dataset, field, gt_field, rerun=changed,
                                      labels=labels)
    summary.eval_note = evaluation.note
    if evaluation.key is not None:
        summary.eval_key = evaluation.key
        summary.evaluated = evaluation.evaluated
        summary.accuracy = evaluation.accuracy
