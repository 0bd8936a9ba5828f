"""Embeddings as FiftyOne keeps them: one vector per sample in a field
(FiftyOne Brain's convention: ``compute_visualization(embeddings=FIELD)``
and the Embeddings panel read it), computed by a model this project runs,
as a task of the prediction run: the same loading, decoding, batching and
resume as ``predict``.

The vector is what the model's classifier head reads: the penultimate
features of a timm or torchvision model (the input of its last linear
layer, as timm's ``forward_head(pre_logits=True)`` gives it), the image
tower's features of an open_clip model (the space its text tower shares).
The pass also writes the model's predictions (``<field>_predictions``),
which the error slices of :mod:`imagenetx.analysis.embedding_slices` read.
Each sample's vector is written with its prediction, in the same update of
the run's background writer, so a run stopped midway and run again computes
only the samples left.
"""

from typing import List, Optional, Sequence

import fiftyone as fo
import torch

from imagenetx.errors import ImageNetXError
from imagenetx.models.config import RunOptions, configure
from imagenetx.models.predict import Classify, ClassifyPlan, PredictSummary
from imagenetx.models.run import ModelRun, Pass, run
from imagenetx.models.sources import ModelRequest
from imagenetx.models.zeroshot import ZeroShotClassifier
from imagenetx.store.datasets import get_dataset


def predictions_field(field: str) -> str:
    """Where :func:`run_embed` writes the model's predictions."""
    return f"{field}_predictions"


def feature_layer(module: torch.nn.Module):
    """``(submodule, "input" | "output")``: where a classifier's embedding
    is read: an open_clip head's image tower output, else the input of the
    model's classifier (timm's ``get_classifier()``) or its last linear
    layer."""
    if isinstance(module, ZeroShotClassifier):
        return module.encoder, "output"
    head = module.get_classifier() if hasattr(module, "get_classifier") else None
    if not isinstance(head, torch.nn.Module) or isinstance(head, torch.nn.Identity):
        linear = [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
        head = linear[-1] if linear else None
    if head is None:
        raise ImageNetXError(
            f"The model {type(module).__name__} has no classifier layer to read "
            "embeddings at: embed with a timm, torchvision or open_clip model")
    return head, "input"


class Embed(Classify):
    """The embed task: the classify task (its predictions go to
    ``<field>_predictions``), each pass's classify batch composed with
    reading what the model's head read, per sample, into ``field``.

    Args:
        field: the embeddings field
        gt_field, slices: as in :class:`~imagenetx.models.predict.Classify`
    """

    def __init__(self, field: str, gt_field: str = "ground_truth",
                 slices: Optional[Sequence[str]] = None):
        super().__init__(gt_field=gt_field, slices=slices, fields={field: fo.VectorField})
        self.field = field

    def describe(self, model: str) -> str:
        return f"embed {model}"

    def claims(self, field: str) -> List[str]:
        return [*super().claims(field), self.field]  # the predictions, and the vectors

    def record(self) -> dict:
        return {"embeddings": self.field}

    def passes(self, run: ModelRun, plan: ClassifyPlan) -> List[Pass]:
        passes = super().passes(run, plan)
        for one in passes:
            one.compute = _EmbedBatch(one.compute, self.field)
            run.closing.callback(one.compute.hook.remove)  # the model may be used again
        return passes


class _EmbedBatch:
    """One batch classified, with the vectors the head read: the background
    writer stores them with each sample's prediction (a resumed run
    computes only the samples left)."""

    def __init__(self, classify, field: str):
        self.classify = classify
        self.field = field
        self.features = None
        layer, where = feature_layer(classify.engine.classifier.module)

        def keep(_module, inputs, output):
            value = output if where == "output" else inputs[0]
            self.features = value.flatten(1).float()

        self.hook = layer.register_forward_hook(keep)

    def __call__(self, positions, images, failed):
        result = self.classify(positions, images, failed)
        if images is None:
            return result
        vectors = self.features[:len(positions)].cpu().numpy()
        return result._replace(vectors={self.field: vectors})


def run_embed(samples, model: str, field: str, request: Optional[ModelRequest] = None,
              options: Optional[RunOptions] = None, gt_field: str = "ground_truth",
              progress=None, slices: Optional[Sequence[str]] = None,
              **kwargs) -> PredictSummary:
    """Writes each sample's embedding by ``model`` to ``field`` (and its
    predictions to ``<field>_predictions``).

    Args:
        samples: a dataset, view, or dataset name
        model: a model spec, as for ``predict``
        field: the embeddings field to write
        request (None), options (None): the model and run options of
            ``predict`` (``overwrite`` recomputes every sample)
        gt_field ("ground_truth"): evaluates the predictions when present
        progress (None), slices (None): as in ``predict``
        **kwargs: fields of ``ModelRequest`` or ``RunOptions``, as in ``predict``

    Raises:
        ImageNetXError: before anything is written, for a bad option, model
            or field (``field`` holding something else than embeddings)
    """
    dataset = get_dataset(samples)._dataset
    if dataset.has_field(field) and not isinstance(dataset.get_field(field), fo.VectorField):
        raise ImageNetXError(
            f"`field='{field}'` of dataset '{dataset.name}' holds "
            f"{type(dataset.get_field(field)).__name__} values, not embeddings: choose "
            "another field")
    request, options = configure(request, options, **kwargs)
    task = Embed(field, gt_field=gt_field, slices=slices)
    return run(samples, model, predictions_field(field), task, request, options, progress)
