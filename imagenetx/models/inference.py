"""Run a classifier over a FiftyOne collection, writing in chunks.

``predict`` reads as its stages: check the options and the field, place
the run (device, autocast, ranks), load the classifier from its source,
list the samples still to do, stream them (decode -> device -> classify ->
background writer), gather the ranks, then evaluate and record what
produced the field. What is stored per sample: :mod:`imagenetx.models.classify`.

Results are written every few hundred samples, so an interrupted run keeps
what was written and a re-run predicts only the samples still without a
prediction. Correctness is then a FiftyOne evaluation under the eval key
``eval_<field>`` (:func:`imagenetx.store.evaluation.evaluate_predictions`).

Speed: DataLoader workers on every core the process may use decode and crop
the images (:mod:`imagenetx.models.loader`; on a GPU the main process also
decodes a share of each batch there), the model runs on uint8 batches
normalized on its device (:mod:`imagenetx.models.engine`), and a
background thread turns the outputs into documents and writes them
(:mod:`imagenetx.models.writer`), so neither decoding in the main process
nor the database holds the model up.
"""

import time
from dataclasses import dataclass, field as dc_field
from typing import Optional, Sequence

import fiftyone as fo

from imagenetx.benchmarks import get_benchmark
from imagenetx.errors import ImageNetXError
from imagenetx.classes.imagenet import class_table
from imagenetx.models import writer
from imagenetx.models.classify import (  # noqa: F401 (error_field re-exported)
    FAILURES_SHOWN, Classify, Predictions, error_field)
from imagenetx.models.distributed import pick
from imagenetx.models.engine import Engine, amp_dtype, default_batch_size  # noqa: F401
from imagenetx.models.loader import (  # noqa: F401 (re-exported)
    DeviceInputs, ImageFiles, collate_images, crop_reader, default_workers,
    error_message, make_loader)
from imagenetx.models.options import RunOptions
from imagenetx.models.pipeline import place, progress_bar, stream
from imagenetx.models.preprocess import without_resize
from imagenetx.models.protocol_run import (
    check_dataset, departure_note, resolve_run, settle_run)
from imagenetx.models.sources import ModelRequest, check_request, load_model
from imagenetx.store.claims import claim_field
from imagenetx.store.datasets import all_slices, get_dataset
from imagenetx.store.evaluation import (
    Written,
    is_classification,
    can_write_with_predictions,
    evaluate_predictions,
)
from imagenetx.store.schema import (
    check_prediction_field,
    declare_classification,
    eval_key_of,
)

#: the key of a prediction field's ``info`` that records its model
INFO_KEY = "imagenetx_model"


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
    #: the protocol the run followed (None: the model's own configuration)
    protocol: Optional[str] = None
    #: the protocol's pinned parameters the run set otherwise
    departures: list = dc_field(default_factory=list)
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
                departure_note(self.departures) or "every pinned value as its authors ran it"))
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
    templates: Optional[str] = None,
    prompt: Optional[str] = None,
    protocol: Optional[str] = None,
) -> PredictSummary:
    """Predicts the class of the samples' images.

    Args:
        samples: a dataset, view, or dataset name
        model: a model spec: ``timm:NAME``, ``torchvision:NAME[:WEIGHTS]``,
            ``checkpoint:PATH``, ``open_clip:ARCH[/PRETRAINED]``,
            ``hf:ORG/NAME`` or ``zoo:NAME`` (see
            :mod:`imagenetx.models.sources`)
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
        logits (False): whether to store the logits (always on a benchmark
            that scores them, such as ImageNet-A/R)
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
        templates (None): a zero-shot model's prompt templates: ``"openai"``
            (OpenAI's 80, the default), ``"simple"`` or a file
        prompt (None): a zero-shot model's single prompt, with ``{c}``
        protocol (None): a paper's protocol (:mod:`imagenetx.protocols`);
            None: the dataset's benchmark's own (``imagenet-d`` on
            ImageNet-D, ``model-vs-human`` on cue conflict), ``"none"``:
            the model's own configuration

    Returns:
        a :class:`PredictSummary`

    Raises:
        ImageNetXError: before any image is read or anything written, for
            a bad option, model spec, checkpoint or field
    """
    request = ModelRequest(arch=arch, pretrained=pretrained,
                           remap_by_position=remap_by_position,
                           templates=templates, prompt=prompt)
    options = RunOptions(batch_size=batch_size, num_workers=num_workers,
                         device=device, amp=amp, compile=compile, decoder=decoder,
                         limit=limit, overwrite=overwrite, protocol=protocol)
    return run_predict(samples, model, field, request, options, gt_field=gt_field,
                       logits=logits, progress=progress, slices=slices)


def run_predict(samples, model: str, field: str, request: ModelRequest,
                options: RunOptions, gt_field: str = "ground_truth",
                logits: bool = False, progress=None,
                slices: Optional[Sequence[str]] = None, task=None,
                attributes: Optional[dict] = None, record: Optional[dict] = None,
                needs_truth: bool = False, check=None,
                departures: Sequence[str] = (),
                what: Optional[str] = None) -> PredictSummary:
    """:func:`predict` with its options as objects (the command line and
    the App build them with :mod:`imagenetx.models.options`).

    Args:
        task (None): ``task(classify, todo) -> (positions, images, failed)
            -> Result``, a task in place of plain classification (an
            attack); it receives the :class:`~imagenetx.models.classify.Classify`
            it may call and the run's :class:`_Todo`
        attributes (None): the task's further attributes of each prediction,
            ``{name: FiftyOne field type}``, declared with the field
        record (None): more of the run's record in the field's info
        needs_truth (False): refuse a dataset without a classification
            ground truth whose labels are the model's (the task uses it)
        check (None): ``check(engine)``, run on the model on its device
            before anything is written (an attack checks its gradients)
        departures (()): the task's own departures from the protocol (an
            attack's budget), recorded with the protocol's
        what (None): the run in words, as another run refused the field
            while this one holds it reads it (default ``predict MODEL``)
    """
    samples = group_slices_of(get_dataset(samples), slices)
    dataset = samples._dataset
    check_prediction_field(dataset, field, gt_field)
    options.check()
    benchmark = get_benchmark(dataset)
    request = request.with_classes(benchmark.output_classes)
    request, options, protocol = resolve_run(benchmark.name, request, options, dataset.name)
    check_dataset(protocol, samples)
    check_request(model, request)  # before the slow imports
    at = place(options)
    # one run per field at a time: claimed before the model loads, released at the end
    with claim_field(dataset, field, what or f"predict {model}", at.ranks) as claim:
        classifier = load_model(model, request)
        protocol, amp = settle_run(protocol, classifier, request, options.amp, at.device.type)
        at.dtype = amp_dtype(amp, at.device)  # pinned per protocol, model and device
        protocol = protocol.with_departures(departures)
        record = {**(record or {}), **protocol.record()}
        if benchmark.keeps_geometry:  # images already at the input size: no zoom
            classifier.preprocessing = without_resize(classifier.preprocessing)
        reader, gpu_share = crop_reader(classifier, options.decoder, at.device)
        decisions = benchmark.decisions() if classifier.classes.is_imagenet else None
        labels = (decisions.labels if decisions else
                  None if classifier.classes.is_imagenet else classifier.classes.labels)
        replace = _check_resume(dataset, field, classifier, record, options.overwrite)
        engine = Engine(classifier, at.device, at.dtype, options.compile, at.batch_size)
        if check is not None:
            check(engine)
        if replace and at.ranks.main:  # after the checks, before the listing
            _clear_other_run(dataset, field)
        todo = _Todo.list(samples, field, gt_field, options, at.ranks, labels,
                          attributes or {}, needs_truth,
                          on_declare=lambda: _record(dataset, field, classifier, record))
        summary = PredictSummary(dataset=dataset.name, field=field, model=model,
                                 device=str(at.device), samples=todo.n_samples,
                                 already_predicted=todo.already_predicted,
                                 protocol=protocol.protocol and protocol.protocol.name,
                                 departures=list(protocol.departures),
                                 took_over=claim.took_over)

        ids, paths = todo.ids, todo.paths
        predictions = None
        start = time.perf_counter()
        if ids:
            batches = iter(make_loader(paths, reader, at.device, at.batch_size,
                                       at.num_workers, gpu_share))
            classify = Classify(engine, logits or benchmark.needs_logits, decisions)
            run_task = classify if task is None else task(classify, todo)
            predictions = Predictions(dataset, field, ids, paths, todo.old_errors, summary,
                                      classifier.classes, decisions, gt=todo.gt,
                                      eval_key=todo.eval_key)
            depth = max(1, writer.WRITE_EVERY // at.batch_size)
            with progress_bar(len(ids), progress, at.ranks) as pb, writer.BackgroundWrites(
                    dataset, predictions, depth, ready=lambda r: r.ready()) as writes:
                stream(batches, DeviceInputs(at.device, reader, paths), run_task, writes.put, pb)
        outcomes = predictions.columns if predictions and todo.gt else None
        if at.ranks.sharded:
            outcomes = _gather(at.ranks, summary, outcomes)
            if not at.ranks.main:
                return summary  # this rank's share; rank 0 evaluates
            if not todo.has_errors and not summary.failed and dataset.has_field(todo.err_field):
                dataset.delete_sample_field(todo.err_field)  # declared, never needed
        if summary.predicted or summary.failed:
            benchmark.predictions_written(dataset, field)
            _record(dataset, field, classifier, record)
        summary.seconds = time.perf_counter() - start

        # an unreadable image clears an old prediction only with --overwrite
        changed = summary.predicted > 0 or (options.overwrite and summary.failed > 0)
        written = Written(outcomes, todo.previous) if outcomes is not None else None
        _evaluate(dataset, field, gt_field, summary, changed=changed, labels=labels,
                  written=written)
        if todo.declared and not dataset.has_evaluation(todo.eval_key):
            dataset.delete_sample_field(todo.eval_key)  # values of no evaluation
        return summary


@dataclass
class _Todo:
    """The samples a run predicts (this rank's share), read and declared by
    rank 0 before any writes and agreed on by every rank."""

    ids: list
    paths: list
    old_errors: list
    #: (labels, label ids) of the ground truth, when the run writes eval values
    gt: Optional[tuple]
    #: each sample's true label, when there is a classification ground truth
    truth: Optional[list]
    n_samples: int
    already_predicted: int
    evaluable: bool
    declared: bool
    has_errors: bool
    err_field: str
    eval_key: str
    previous: Optional[object]

    @classmethod
    def list(cls, samples, field, gt_field, options: RunOptions, ranks, labels,
             attributes: dict, needs_truth: bool = False,
             on_declare=None) -> "_Todo":
        dataset = samples._dataset
        err_field = error_field(field)
        has_errors = dataset.has_field(err_field)
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
        listed = None
        if ranks.main:  # one list for all ranks, read and declared before any writes
            columns = todo.values(
                ["_id", "filepath"] + truth + ([err_field] if has_errors else []),
                _raw=True)
            known = set(class_table().labels if labels is None else labels)
            in_classes = has_truth and known.issuperset(
                x for x in columns[2] if x is not None)  # else the evaluation says why
            evaluable = in_classes and previous is not None
            declared = False
            if needs_truth and columns[0] and not in_classes:
                raise ImageNetXError(
                    f"Dataset '{dataset.name}' has no classification ground truth "
                    f"'{gt_field}' in the model's classes for every image: the run "
                    "needs each image's class; pass --gt-field, or tag the dataset "
                    "(`imagenetx tag`)")
            if columns[0]:
                _declare_prediction_field(dataset, field, attributes)
                if on_declare is not None:
                    on_declare()  # the run's record before its first write
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
        ids = columns[0]
        return cls(
            ids=ids, paths=columns[1],
            old_errors=columns[-1] if has_errors else [None] * len(ids),
            gt=(columns[2], columns[3]) if evaluable else None,
            truth=columns[2] if has_truth else None,
            n_samples=n_samples,
            already_predicted=n_samples - n_pending if pending is not samples else 0,
            evaluable=evaluable, declared=declared, has_errors=has_errors,
            err_field=err_field, eval_key=eval_key, previous=previous)


#: the parts of a field's record that say which predictions it holds: a run
#: adds to a field only where they are the same
IDENTITY = ("spec", "classes", "pretrained", "templates", "prompt", "num_templates",
            "attack", "protocol", "protocol_applied")


def run_record(classifier, more: Optional[dict] = None) -> dict:
    """What a field's ``info["imagenetx_model"]`` keeps of the run that
    made it: source, output classes, prompts (and ``more``)."""
    return {"spec": classifier.spec, "source": classifier.source,
            "classes": classifier.classes.name, "probabilities": classifier.probabilities,
            **{k: v for k, v in classifier.record.items() if k != "classes"},
            **(more or {})}


def record_differences(stored: dict, new: dict) -> list:
    """The :data:`IDENTITY` parts in which two run records differ (a record
    written before ``protocol_applied`` was kept differs in it only where
    the new run applied other than runs did then)."""
    return [k for k in IDENTITY if new.get(k) != stored.get(k) and not (
        k == "protocol_applied" and k not in stored
        and applied_as_before(new.get(k)))]


def applied_as_before(applied: Optional[dict]) -> bool:
    """Whether a protocol run applied what runs did before the record kept
    it: no model-vs-human wrapper or RobustBench entry's own preprocessing
    (the loader's or the protocol's default geometry) and no autocast."""
    return bool(applied) and applied.get("amp") == "off" and applied.get(
        "preprocessing") in (None, "loader", "Res256Crop224")


def _check_resume(dataset, field: str, classifier, more: Optional[dict],
                  overwrite: bool) -> bool:
    """Refuses, before anything is written, a run that would add its
    predictions to a field another model, other prompts or another attack
    filled (a resumed run adds only the samples missing). Returns whether
    the field holds such predictions and ``overwrite`` is set: they are
    then all cleared, not only those of the samples this run predicts."""
    if not dataset.has_field(field) or not all_slices(dataset).count(field):
        return False
    stored = (dataset.get_field(field).info or {}).get(INFO_KEY)
    new = run_record(classifier, more)
    if stored is None:
        if "attack" not in new:
            return False  # imported predictions: their file names say what they are
        message = (f"Field '{field}' holds predictions that no attack made: choose another "
                   "--field for the adversarial predictions, or pass --overwrite to replace "
                   "them")
    else:
        differ = record_differences(stored, new)
        if not differ:
            return False

        def what(r):
            return r.get("spec") + (" attacked" if r.get("attack") else "")

        message = (f"Field '{field}' holds predictions of {what(stored)}, and this run would "
                   f"add {what(new)}'s ({', '.join(differ)} differ): pass --overwrite to "
                   "replace them, or choose another --field")
    if not overwrite:
        raise ImageNetXError(message)
    return True


def _clear_other_run(dataset, field: str) -> None:
    """Clears every sample's prediction of another run (and its errors and
    evaluation), so a run with ``--limit`` or on a view leaves no mix."""
    samples = all_slices(dataset)
    samples.clear_sample_field(field)
    if dataset.has_field(error_field(field)):
        samples.clear_sample_field(error_field(field))
    if dataset.has_evaluation(eval_key_of(field)):
        dataset.delete_evaluation(eval_key_of(field))


def _record(dataset, field: str, classifier, more: Optional[dict] = None) -> None:
    """Keeps in the field's ``info`` which source, output classes and
    prompts produced it (and ``more`` of the run: an attack's settings)."""
    f = dataset.get_field(field)
    info = dict(f.info or {})
    info[INFO_KEY] = run_record(classifier, more)
    f.info = info
    f.save()


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


def _declare_prediction_field(dataset, field, attributes: Optional[dict] = None):
    declare_classification(dataset, field, **(attributes or {}))
    # confidence and logits are built into fo.Classification
    for attr, sub in (("top5", fo.IntField), ("top5_confidences", fo.FloatField)):
        if not dataset.has_field(f"{field}.{attr}"):
            dataset.add_sample_field(f"{field}.{attr}", fo.ListField, subfield=sub)


def _evaluate(dataset, field, gt_field, summary, changed: bool, labels=None,
              written: Optional[Written] = None):
    evaluation = evaluate_predictions(dataset, field, gt_field, rerun=changed,
                                      labels=labels, written=written)
    summary.eval_note = evaluation.note
    if evaluation.key is not None:
        summary.eval_key = evaluation.key
        summary.evaluated = evaluation.evaluated
        summary.accuracy = evaluation.accuracy
