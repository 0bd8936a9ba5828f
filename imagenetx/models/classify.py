"""The classify task: logits become stored predictions.

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
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import fiftyone as fo
import torch

from imagenetx.classes.decisions import Decisions
from imagenetx.classes.outputs import OutputClasses
from imagenetx.models.engine import Engine
from imagenetx.store.schema import raw_classification

TOP_K = 5
#: failures listed by name in the summary
FAILURES_SHOWN = 5


def error_field(field: str) -> str:
    """The field that records why a sample's image could not be read."""
    return f"{field}_error"


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

    def ready(self) -> "Result":
        """The same, once the device has written it."""
        if self.event is not None:
            self.event.synchronize()
        return self._replace(event=None)


class Classify:
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


class Predictions:
    """Turns :class:`Result` s into stored ``fo.Classification`` documents
    (and, with a ground truth, each sample's ``eval_<field>`` value).

    Args:
        dataset: the dataset written
        field: the prediction field
        ids, paths: the run's samples, by position
        old_errors: each sample's stored read error (cleared when it reads)
        summary: the run's summary, counted into
        classes: what the model's outputs stand for
        decisions (None): a benchmark's own classes
        gt (None): ``(labels, label ids)`` of the ground truth per position
        eval_key (None): the evaluation's key
    """

    def __init__(self, dataset, field, ids, paths, old_errors, summary,
                 classes: OutputClasses, decisions: Optional[Decisions] = None,
                 gt=None, eval_key: Optional[str] = None):
        self.dataset = dataset
        self.gt = gt
        self.eval_key = eval_key
        self.outcomes = {}  # position -> (gt label, gt id, label, id, confidence)
        self.field = field
        self.err_field = error_field(field)
        self.ids = ids
        self.paths = paths
        self.old_errors = old_errors
        self.summary = summary
        self.labels = classes.labels
        self.indices = None if classes.is_imagenet else list(classes.indices)
        self.decided_labels = decisions.labels if decisions else None
        self.vector = fo.VectorField()

    def __call__(self, result: Result) -> dict:
        """The updates of one result."""
        positions, idx, conf, out, decided, failed = result[:6]
        attrs = {k: v.tolist() for k, v in (result.attrs or {}).items()}
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
