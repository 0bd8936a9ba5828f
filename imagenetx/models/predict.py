"""Predict: the classify task of a model run, and its keyword door.

Each predicted sample gets a ``fo.Classification`` in the prediction field:

-   ``label``: the output class's label (ImageNet's unique label,
    ``ClassTable.labels``, or a benchmark's own, e.g. ImageNet-D's),
    ``class_index``: its ImageNet-1k index
-   ``confidence``: the probability of that class (softmax; the sigmoid of
    a model trained with one, SigLIP)
-   ``top5`` / ``top5_confidences``: the five best classes' indices and
    their probabilities, best first
-   ``logits``: the raw outputs, only when kept

On a benchmark with its own answers (the 16 categories of a cue-conflict
dataset: ``Benchmark.decisions``), ``label``, ``class_index`` and
``confidence`` are the decision in those classes instead, and ``top5`` keeps
the 1000-way view. An image that cannot be read leaves the prediction
empty and its reason in ``<field>_error``.

Results are written every few hundred samples, so an interrupted run keeps
what was written and a re-run predicts only the samples still without a
prediction. Correctness is then a FiftyOne evaluation under the eval key
``eval_<field>`` (:func:`imagenetx.store.evaluation.evaluate_predictions`),
whose values are written with the predictions where the dataset has a
classification ground truth.

Speed: DataLoader workers on every core the process may use decode and crop
the images (:mod:`imagenetx.models.loader`; on a GPU the main process also
decodes a share of each batch there), the model runs on uint8 batches
normalized on its device (:mod:`imagenetx.models.device`), and a
background thread turns the outputs into documents and writes them
(:mod:`imagenetx.models.writer`), so neither decoding in the main process
nor the database holds the model up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field as dc_field
from typing import Callable, ClassVar, List, NamedTuple, Optional, Sequence

import fiftyone as fo
import torch

from imagenetx.benchmarks import error_ratio_metric
from imagenetx.classes.decisions import Decisions
from imagenetx.classes.imagenet import class_table
from imagenetx.classes.outputs import OutputClasses
from imagenetx.errors import ImageNetXError
from imagenetx.models.config import RunOptions, configure
from imagenetx.models.device import Engine
from imagenetx.protocols.base import departure_note
from imagenetx.models.run import (
    ModelRun, Pass, Plan, Task, record_differences, run, write_record)
from imagenetx.models.sources import ModelRequest
from imagenetx.store.datasets import all_slices
from imagenetx.store.evaluation import (
    Written, can_write_with_predictions, evaluate_predictions, is_classification)
from imagenetx.store.names import INFO_KEY, error_field
from imagenetx.store.schema import (
    check_prediction_field, declare_classification, eval_key_of, raw_classification)

TOP_K = 5


@dataclass
class PredictSummary:
    """What :func:`predict` did."""

    #: the counts every rank's writes add to (summed over a sharded run's ranks)
    COUNTED: ClassVar[tuple] = ("predicted",)

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
    #: the protocol the run followed (None: the model's own configuration)
    protocol: Optional[str] = None
    #: the protocol's pinned parameters the run set otherwise
    departures: list = dc_field(default_factory=list)
    #: each departure in words
    departure_details: dict = dc_field(default_factory=dict)
    #: the line saying whose stale claim of the field this run took over
    took_over: Optional[str] = None

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
        if self.took_over:
            lines.insert(0, self.took_over)
        if self.protocol:
            lines.append(f"Protocol '{self.protocol}': " + (
                departure_note(self.departures, self.departure_details)
                or "every pinned value as its authors ran it"))
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


def predict(samples, model: str, field: str, gt_field: str = "ground_truth",
            logits: bool = False, slices: Optional[Sequence[str]] = None, progress=None,
            request: Optional[ModelRequest] = None, options: Optional[RunOptions] = None,
            **kwargs) -> PredictSummary:
    """Predicts the class of the samples' images.

    Args:
        samples: a dataset, view, or dataset name
        model: a model spec: ``timm:NAME``, ``torchvision:NAME[:WEIGHTS]``,
            ``checkpoint:PATH``, ``open_clip:ARCH[/PRETRAINED]``,
            ``hf:ORG/NAME`` or ``zoo:NAME`` (see
            :mod:`imagenetx.models.sources`)
        field: the ``fo.Classification`` field to write
        gt_field ("ground_truth"): the ground truth for the evaluation,
            skipped when the dataset has no such field
        logits (False): whether to store the logits (always on a benchmark
            that scores them, such as ImageNet-A/R)
        slices (None): on a grouped dataset, the group slices to predict;
            None: all of them (see :func:`group_slices_of`)
        progress (None): whether to render a progress bar (True/False), use
            ``fo.config.show_progress_bars`` (None), or a callback that
            receives a ``fiftyone.core.utils.ProgressBar``
        request (None): which model is loaded and how
            (:class:`~imagenetx.models.sources.ModelRequest`)
        options (None): how the run goes
            (:class:`~imagenetx.models.config.RunOptions`)
        **kwargs: fields of either, set on top: the model's ``arch``
            (of a ``checkpoint:`` spec), ``pretrained`` (False: random
            weights), ``remap_by_position``, a zero-shot model's
            ``templates`` or ``prompt``; the run's ``batch_size``,
            ``num_workers``, ``device``, ``amp``, ``compile``, ``decoder``,
            ``limit``, ``overwrite`` (predict all samples, not only those
            without a prediction), ``protocol`` (None: the dataset's
            benchmark's own, ``"none"``: the model's own configuration),
            ``preprocessing``

    Returns:
        a :class:`PredictSummary`

    Raises:
        ImageNetXError: before any image is read or anything written, for
            a bad option, model spec, checkpoint or field
    """
    request, options = configure(request, options, **kwargs)
    task = Classify(gt_field=gt_field, logits=logits, slices=slices)
    return run(samples, model, field, task, request, options, progress)


class Result(NamedTuple):
    """One batch's outputs, on the CPU: top-5 ``idx`` (output positions) and
    ``conf``, the ``logits`` when kept, the ``decided`` ``(n, 2)`` index and
    score in a benchmark's own classes when it has them; ``event`` to wait
    on before reading them (None on the CPU)."""

    positions: torch.Tensor
    idx: Optional[torch.Tensor]
    conf: Optional[torch.Tensor]
    logits: Optional[torch.Tensor]
    decided: Optional[torch.Tensor]
    failed: list
    event: Optional[object] = None
    #: more attributes of each row's prediction, ``{name: per-row list}``
    #: (an attack's ``flipped``, ...)
    attrs: Optional[dict] = None
    #: more fields of each row's sample, ``{field: (rows, d) array}``, written
    #: as vectors with the prediction (embed's)
    vectors: Optional[dict] = None

    def ready(self) -> "Result":
        """The same, once the device has written it."""
        if self.event is not None:
            self.event.synchronize()
        return self._replace(event=None)


class Classify(Task):
    """The classify task: one prediction per sample, evaluated against the
    ground truth (the summary: :class:`PredictSummary`). An attack or an
    embedding is this task with more attributes or fields, its own summary
    and check, and its own step composed with the :class:`ClassifyBatch` of
    each pass.

    Args:
        gt_field ("ground_truth"): the ground truth for the evaluation
        logits (False): whether to store the logits
        slices (None): on a grouped dataset, the group slices to predict
        attributes (None): more attributes of each prediction, ``{name:
            FiftyOne field type}``, declared with the field (an attack's)
        fields (None): more fields written with the predictions, ``{name:
            FiftyOne field type}``, declared with them (embed's vectors)
        needs_truth (False): whether to refuse a dataset without a
            classification ground truth in the model's classes (the step
            uses each image's class)
        summary (None): ``**values -> summary`` (default
            :class:`PredictSummary`)
        check (None): ``run -> None``, checks the model on its device before
            anything is written (an attack's gradients)
    """

    def __init__(self, gt_field: str = "ground_truth", logits: bool = False,
                 slices: Optional[Sequence[str]] = None, attributes: Optional[dict] = None,
                 fields: Optional[dict] = None, needs_truth: bool = False,
                 summary: Optional[Callable] = None, check: Optional[Callable] = None):
        self.gt_field = gt_field
        self.logits = logits
        self.slices = slices
        self.attributes = dict(attributes or {})
        self.fields = dict(fields or {})
        self.needs_truth = needs_truth
        self.summary = summary or PredictSummary
        self.check = check

    def select(self, samples, field: str):
        samples = group_slices_of(samples, self.slices)
        check_prediction_field(samples._dataset, field, self.gt_field)
        return samples

    def describe(self, model: str) -> str:
        return f"predict {model}"

    def start(self, run: ModelRun) -> "ClassifyPlan":
        dataset, field = run.dataset, run.target
        classes = run.classifier.classes
        decisions = run.benchmark.decisions() if classes.is_imagenet else None
        labels = (decisions.labels if decisions else
                  None if classes.is_imagenet else classes.labels)
        replace = _check_resume(dataset, field, run.record, run.options.overwrite)
        run.engine  # on its device now: after the check of what is stored, before the listing
        if self.check is not None:
            self.check(run)
        if replace and run.ranks.main:  # after the checks, before the listing
            _clear_other_run(dataset, field)
        todo = _Todo.list(run, self, labels)
        summary = self.summary(
            dataset=dataset.name, field=field, model=run.model,
            device=str(run.placement.device), samples=todo.n_samples,
            already_predicted=todo.already_predicted,
            protocol=run.protocol.protocol and run.protocol.protocol.name,
            departures=list(run.protocol.departures),
            departure_details=dict(run.protocol.details), took_over=run.took_over)
        writes = ClassificationWrites(field, todo, summary, classes, decisions)
        return ClassifyPlan(summary, todo.ids, todo.paths, todo=todo, decisions=decisions,
                            labels=labels, writes=writes)

    def passes(self, run: ModelRun, plan: "ClassifyPlan") -> List[Pass]:
        if not plan.todo.ids:
            return []
        batch = ClassifyBatch(run.engine, self.logits or run.benchmark.needs_logits,
                              plan.decisions)
        return [Pass(plan.todo.paths, batch, plan.writes, ready=Result.ready)]

    def finish(self, run: ModelRun, plan: "ClassifyPlan"):
        dataset, field, todo, summary = run.dataset, run.target, plan.todo, plan.summary
        totals = plan.totals  # every rank's
        for name in summary.COUNTED:
            setattr(summary, name, totals[name])
        outcomes = _columns(totals["outcomes"]) if todo.gt else None
        if run.ranks.sharded:
            summary.per_rank = [s["predicted"] for s in plan.shares]
            if not run.ranks.main:
                return summary  # rank 0 records and evaluates
        if summary.predicted or summary.failed:
            run.benchmark.predictions_written(dataset, field)
            write_record(dataset, field, run.record)
        summary.seconds = time.perf_counter() - run.started
        # an unreadable image clears an old prediction only with `overwrite=True`
        changed = summary.predicted > 0 or (run.options.overwrite and summary.failed > 0)
        written = Written(outcomes, todo.previous) if outcomes is not None else None
        run.claim.check()  # before the evaluation, as before the record
        _evaluate(dataset, field, self.gt_field, summary, changed=changed,
                  labels=plan.labels, written=written)
        if todo.declared and not dataset.has_evaluation(todo.eval_key):
            dataset.delete_sample_field(todo.eval_key)  # values of no evaluation
        return summary


@dataclass
class ClassifyPlan(Plan):
    """A classify run's plan: its samples, the benchmark's own classes
    (``decisions``) and labels the evaluation uses, and the writes that
    count into the summary."""

    todo: Optional["_Todo"] = None
    decisions: Optional[Decisions] = None
    labels: Optional[list] = None
    writes: Optional["ClassificationWrites"] = None

    def share(self) -> dict:
        return {**{name: getattr(self.summary, name) for name in self.summary.COUNTED},
                "outcomes": self.writes.rows}


@dataclass
class _Todo:
    """The samples a run predicts (this rank's share), read and declared by
    rank 0 before any writes and agreed on by every rank."""

    ids: list
    paths: list
    #: (labels, label ids) of the ground truth, when the run writes eval values
    gt: Optional[tuple]
    #: each sample's true label, when there is a classification ground truth
    truth: Optional[list]
    n_samples: int
    already_predicted: int
    evaluable: bool
    declared: bool
    eval_key: str
    previous: Optional[object]

    @classmethod
    def list(cls, run: ModelRun, task: Classify, labels: Optional[list]) -> "_Todo":
        samples, dataset, field = run.samples, run.dataset, run.target
        options, gt_field = run.options, task.gt_field
        pending = samples
        if dataset.has_field(field) and not options.overwrite:
            pending = samples.exists(field, False)
        todo = pending.limit(options.limit) if options.limit is not None else pending
        # with a classification ground truth, each prediction's eval_<field>
        # value is written with it, so the evaluation after the run writes none
        previous = can_write_with_predictions(dataset, field, gt_field)
        has_truth = is_classification(dataset, gt_field)
        truth = [f"{gt_field}.label", f"{gt_field}._id"] if has_truth else []
        eval_key = eval_key_of(field)

        def listing():  # rank 0's
            columns = todo.values(["_id", "filepath"] + truth, _raw=True)
            known = set(class_table().labels if labels is None else labels)
            in_classes = has_truth and known.issuperset(
                x for x in columns[2] if x is not None)  # else the evaluation says why
            evaluable = in_classes and previous is not None
            declared = False
            if task.needs_truth and columns[0] and not in_classes:
                raise ImageNetXError(
                    f"Dataset '{dataset.name}' has no classification ground truth "
                    f"'{gt_field}' in the model's classes for every image: the run "
                    "needs each image's class; pass `gt_field`, or tag the dataset "
                    "(`tag_dataset()`)")
            if columns[0]:
                _declare_prediction_field(dataset, field, task.attributes)
                for name, kind in task.fields.items():  # embed's vectors
                    if not dataset.has_field(name):
                        dataset.add_sample_field(name, kind)
                write_record(dataset, field, run.record)  # before the first write
                if evaluable and not dataset.has_field(eval_key):
                    dataset.add_sample_field(eval_key, fo.BooleanField)
                    declared = True
            return columns, len(samples), len(pending), evaluable, declared

        columns, n_samples, n_pending, evaluable, declared = run.listing(listing)
        columns = run.share(columns)
        return cls(
            ids=columns[0], paths=columns[1],
            gt=(columns[2], columns[3]) if evaluable else None,
            truth=columns[2] if has_truth else None,
            n_samples=n_samples,
            already_predicted=n_samples - n_pending if pending is not samples else 0,
            evaluable=evaluable, declared=declared, eval_key=eval_key, previous=previous)


class ClassifyBatch:
    """Logits -> a :class:`Result` per batch, on the device; the copy back
    to the CPU does not block (the writer waits for it).

    Args:
        engine: the classifier on its device
        keep_logits: whether results carry the logits
        decisions (None): a benchmark's map from 1000 ImageNet
            probabilities to its own classes
    """

    def __init__(self, engine: Engine, keep_logits: bool,
                 decisions: Optional[Decisions] = None):
        self.engine = engine
        self.keep_logits = keep_logits
        self.decision_matrix = None if decisions is None else torch.as_tensor(
            decisions.matrix, device=engine.device)

    def __call__(self, positions, images, failed, attrs=None) -> Result:
        """The result of one batch.

        Args:
            positions, images, failed: the batch (images on the device:
                uint8 crops, or floats in ``[0, 1]``)
            attrs (None): the top-5 output indices on the device ->
                ``{name: per-row tensor}`` of more attributes to store (a
                task's, e.g. an attack's ``flipped``)
        """
        if images is None:
            return Result(positions, None, None, None, None, failed)
        with torch.inference_mode():
            logits = self.engine.logits(images)
            probs = self.engine.probabilities(logits)
            conf, idx = probs.topk(min(TOP_K, probs.shape[1]), dim=1)
            decided = None
            if self.decision_matrix is not None:
                # model-vs-human averages softmax probabilities for every
                # model (a SigLIP's stored confidences are its sigmoids)
                decided = (logits.softmax(dim=1) @ self.decision_matrix).max(dim=1)
                decided = torch.stack([decided.indices.float(), decided.values], 1)
            more = attrs(idx) if attrs else {}
        idx, conf, logits, decided = [
            None if t is None else t.to("cpu", non_blocking=True)
            for t in (idx, conf, logits if self.keep_logits else None, decided)
        ]
        more = {k: v.to("cpu", non_blocking=True) for k, v in more.items()}
        event = None
        if self.engine.device.type == "cuda":
            event = torch.cuda.Event()
            event.record()
        return Result(positions, idx, conf, logits, decided, failed, event, more or None)


class ClassificationWrites:
    """Turns :class:`Result` s into stored ``fo.Classification`` documents
    (and, with a ground truth, each sample's ``eval_<field>`` value); an
    unreadable image's prediction is cleared (its reason is the run's).

    Args:
        field: the prediction field
        todo: the run's samples, by position (ids, ground truth, eval key)
        summary: the run's summary, counted into
        classes: what the model's outputs stand for
        decisions (None): a benchmark's own classes
    """

    def __init__(self, field, todo: _Todo, summary: PredictSummary,
                 classes: OutputClasses, decisions: Optional[Decisions] = None):
        self.gt = todo.gt
        self.eval_key = todo.eval_key
        self.outcomes = {}  # position -> (gt label, gt id, label, id, confidence)
        self.field = field
        self.ids = todo.ids
        self.summary = summary
        self.labels = classes.labels
        self.indices = None if classes.is_imagenet else list(classes.indices)
        self.decided_labels = decisions.labels if decisions else None
        self.vector = fo.VectorField()

    def __call__(self, result: Result) -> dict:
        """The updates of one result."""
        positions, idx, conf, out, decided, failed = result[:6]
        attrs = {k: v.tolist() for k, v in (result.attrs or {}).items()}
        vectors = result.vectors or {}
        updates = {}
        labels, indices = self.labels, self.indices
        if idx is not None:
            idx_rows = idx.tolist()
            conf_rows = conf.tolist()
            logit_rows = out.numpy() if out is not None else None
            decided_rows = decided.tolist() if decided is not None else None
            for row, pos in enumerate(positions.tolist()):
                top = idx_rows[row]
                top5 = top if indices is None else [indices[k] for k in top]
                extra = {name: values[row] for name, values in attrs.items()}
                if logit_rows is not None:
                    extra["logits"] = self.vector.to_mongo(logit_rows[row])
                if decided_rows is None:
                    label, index, confidence = labels[top[0]], top5[0], conf_rows[row][0]
                else:
                    index, confidence = int(decided_rows[row][0]), decided_rows[row][1]
                    label = self.decided_labels[index]
                update = {
                    self.field: raw_classification(
                        label, index, confidence=confidence, top5=top5,
                        top5_confidences=conf_rows[row], **extra)
                }
                for name, values in vectors.items():
                    update[name] = self.vector.to_mongo(values[row])
                if self.gt is not None and self.gt[0][pos] is not None:
                    truth = self.gt[0][pos]
                    update[self.eval_key] = truth == label
                    self.outcomes[pos] = (truth, str(self.gt[1][pos]), label,
                                          str(update[self.field]["_id"]), confidence)
                updates[self.ids[pos]] = update
            self.summary.predicted += len(idx_rows)
        for pos, _ in failed:
            updates[self.ids[pos]] = {self.field: None}
            if self.gt is not None:  # no prediction: no outcome
                updates[self.ids[pos]][self.eval_key] = None
        return updates

    @property
    def rows(self) -> list:
        """``(ytrue, ytrue_id, ypred, ypred_id, conf)`` of each sample
        written with a ground truth, in the order of the run."""
        return [self.outcomes[pos] for pos in sorted(self.outcomes)]


def _columns(rows: list) -> list:
    """Outcome rows as ``[ytrue, ytrue_ids, ypred, ypred_ids, confs]``."""
    return [list(c) for c in zip(*rows)] if rows else [[], [], [], [], []]


def _check_resume(dataset, field: str, new: dict, overwrite: bool) -> bool:
    """Refuses, before anything is written, a run that would add its
    predictions to a field another model, other prompts or another attack
    filled (a resumed run adds only the samples missing). Returns whether
    the field holds such predictions and ``overwrite`` is set: they are
    then all cleared, not only those of the samples this run predicts."""
    if not dataset.has_field(field) or not all_slices(dataset).count(field):
        return False
    stored = (dataset.get_field(field).info or {}).get(INFO_KEY)
    if stored is None:
        if "attack" not in new:
            return False  # imported predictions: their file names say what they are
        message = (f"Field '{field}' holds predictions that no attack made: choose another "
                   "`field` for the adversarial predictions, or pass `overwrite=True` to "
                   "replace them")
    else:
        differ = record_differences(stored, new)
        if not differ:
            return False

        def what(r):
            return r.get("spec") + (" attacked" if r.get("attack") else "")

        if "precision" in differ and "precision" not in stored:
            message = (f"Field '{field}' holds predictions of {what(stored)} whose precision "
                       "its run record does not keep (made before runs recorded it), so this "
                       f"run ({new.get('precision')}) cannot add to them: pass "
                       "`overwrite=True` to replace them, or choose another `field`")
        else:
            said = [f"precision {stored.get('precision')} stored, {new.get('precision')} now"
                    if k == "precision" else k for k in differ]
            message = (f"Field '{field}' holds predictions of {what(stored)}, and this run "
                       f"would add {what(new)}'s ({', '.join(said)} differ): pass "
                       "`overwrite=True` to replace them, or choose another `field`")
    if not overwrite:
        raise ImageNetXError(message)
    return True


def _clear_other_run(dataset, field: str) -> None:
    """Clears every sample's prediction of another run (and its errors and
    evaluation), so a run with a ``limit`` or on a view leaves no mix."""
    samples = all_slices(dataset)
    samples.clear_sample_field(field)
    if dataset.has_field(error_field(field)):
        samples.clear_sample_field(error_field(field))
    if dataset.has_evaluation(eval_key_of(field)):
        dataset.delete_evaluation(eval_key_of(field))


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
            f"Dataset '{samples._dataset.name}' is not grouped: `slices` names "
            "group slices; leave it out")
    known = samples._dataset.group_slices
    unknown = [s for s in slices if s not in known]
    if unknown:
        raise ImageNetXError(
            f"Unknown group slice '{unknown[0]}' of dataset "
            f"'{samples._dataset.name}': its slices are {', '.join(known)}")
    return all_slices(samples, list(slices))


def _declare_prediction_field(dataset, field, attributes: Optional[dict] = None):
    declare_classification(dataset, field, **(attributes or {}))
    # confidence and logits are built into fo.Classification
    for attr, sub in (("top5", fo.IntField), ("top5_confidences", fo.FloatField)):
        if not dataset.has_field(f"{field}.{attr}"):
            dataset.add_sample_field(f"{field}.{attr}", fo.ListField, subfield=sub)


def _evaluate(dataset, field, gt_field, summary, changed: bool, labels=None,
              written: Optional[Written] = None):
    evaluation = evaluate_predictions(dataset, field, gt_field, rerun=changed,
                                      labels=labels, written=written,
                                      # asked only when it evaluates again
                                      custom_metrics=(error_ratio_metric(dataset, gt_field)
                                                      if changed else None))
    summary.eval_note = evaluation.note
    if evaluation.key is not None:
        summary.eval_key = evaluation.key
        summary.evaluated = evaluation.evaluated
        summary.accuracy = evaluation.accuracy
