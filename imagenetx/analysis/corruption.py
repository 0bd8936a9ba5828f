"""Corruption errors (CE, mCE, relative mCE) of a prediction field on a
released ImageNet-C dataset (:mod:`imagenetx.benchmarks.ood`), and the
plain top-1 / top-5 accuracy per corruption and severity with its mean over
the cells on a released ImageNet-C or ImageNet-C-bar dataset, as Gavrikov &
Keuper report them (``top1_acc/imagenet-c``: 19 corruptions x 5
severities; ``top1_acc/imagenet-cbar``: 10 x 5), and on ImageNet-3DCC as
RobustBench's ``corruptions_3d`` does (``corruptions_acc_3d``: 12 x 5).

Corruptions made on the fly have theirs in the probe results
(:mod:`imagenetx.analysis.probes`); both end in
:func:`imagenetx.metrics.corruption.corruption_errors`.
"""

import math
from dataclasses import dataclass, field as dc_field, replace
from typing import List, Optional

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.corruption import (
    ALEXNET_ERRORS,
    SEVERITIES,
    CorruptionAccuracy,
    CorruptionErrors,
    corruption_accuracy,
    corruption_errors,
)
from imagenetx.analysis.engine import compute_ratios
from imagenetx.analysis.populations import val_images, whole_set_top1
from imagenetx.analysis.settings import Settings
from imagenetx.benchmarks import get_benchmark
from imagenetx.benchmarks.loading import load_hint
from imagenetx.classes.spaces import int_column
from imagenetx.store.datasets import get_dataset

#: the benchmarks whose release folders hold corruption x severity images
CORRUPTION_BENCHMARKS = ("imagenet_c", "imagenet_cbar", "imagenet_3dcc")
#: the table that publishes each one's mean over the cells
_TABLES = {"imagenet_3dcc": "RobustBench's ImageNet corruptions_3d leaderboard"}
_GAVRIKOV = "Gavrikov & Keuper's benchmark.csv"


def imagenet_c_errors(samples, field: str, clean_dataset: Optional[str] = None,
                      clean_accuracy: Optional[float] = None,
                      gt_field: str = "ground_truth") -> CorruptionErrors:
    """Top-1 error per corruption and severity of ``field`` on an ImageNet-C
    dataset, with CE per corruption and mCE against AlexNet's published
    errors; relative CE and mCE when the clean error is known.

    Args:
        samples: an ImageNet-C dataset, view or dataset name
        field: the prediction field
        clean_dataset (None): a dataset of the clean images (ImageNet val)
            whose ``field`` gives the clean accuracy: top-1 over every val
            image with a ground truth (all 50,000, annotated or not)
        clean_accuracy (None): the clean top-1 accuracy, as a fraction
        gt_field ("ground_truth"): the ground truth field

    The result's ``accuracy`` is the top-1 (top-5 with stored logits)
    table over every corruption of the release the dataset has, the 4
    extra ones included: its ``mean_top1`` is Gavrikov & Keuper's
    ImageNet-C accuracy (``top1_acc/imagenet-c``, over 19 x 5 cells);
    mCE stays over the 15.

    Raises:
        ImageNetXError: for a dataset that is not ImageNet-C, both clean
            sources, or a clean accuracy outside [0, 1]
    """

    samples = get_dataset(samples)
    if get_benchmark(samples).name == "imagenet_cbar":
        raise ImageNetXError(
            f"Dataset '{samples._dataset.name}' is ImageNet-C-bar, which has no published "
            "AlexNet errors to compute CE against: measure its corruption accuracy "
            "instead (`corruption_accuracy_of()`)")
    if get_benchmark(samples).name != "imagenet_c":
        raise ImageNetXError(
            f"Dataset '{samples._dataset.name}' is not ImageNet-C: {load_hint('imagenet_c')}"
            ", or measure corruptions on the fly "
            "(`run_probe(probe='corruption')`)")
    if clean_dataset is not None and clean_accuracy is not None:
        raise ImageNetXError("Give the clean accuracy or a clean dataset, not both")
    if clean_accuracy is not None and not 0 <= clean_accuracy <= 1:
        raise ImageNetXError(
            f"Clean accuracy {clean_accuracy} is not a fraction in [0, 1], e.g. 0.76")
    if clean_dataset is not None:
        clean_view = get_dataset(clean_dataset)
        if get_benchmark(clean_view).name == "imagenet_x":
            # every val image with a ground truth (all 50,000), annotated or not
            clean = whole_set_top1(val_images(clean_view), [field], gt_field)[field]
            if not clean.n:
                raise ImageNetXError(
                    f"No val image of clean dataset '{clean_view._dataset.name}' has both "
                    f"a ground truth and predictions '{field}': predict the model there "
                    "first, or give `clean_accuracy`")
            clean_accuracy = clean.accuracy
        else:
            clean = compute_ratios(clean_view, [field], intervals=False, gt_field=gt_field)
            clean_accuracy = clean.models[field].accuracy

    result = compute_ratios(samples, [field], intervals=False, gt_field=gt_field,
                            slicing="corruption", by="severity")
    groups = result.models[field].groups or {}
    cells = {}
    for severity, group in groups.items():
        for corruption, stats in group.slices.items():
            if stats.n:
                cells[(corruption, int(severity))] = 1 - stats.accuracy
    names = [c for c in ALEXNET_ERRORS if any((c, s) in cells for s in SEVERITIES)]
    if not names:
        raise ImageNetXError(
            f"No images of the 15 ImageNet-C corruptions with predictions '{field}' "
            f"in '{samples._dataset.name}'")
    errors = np.array([[cells.get((c, s), math.nan) for s in SEVERITIES] for c in names])
    clean_error = math.nan if clean_accuracy is None else 1 - clean_accuracy
    accuracy = corruption_accuracy_of(samples, field, gt_field).accuracy
    return replace(corruption_errors(errors, clean_error, names), accuracy=accuracy)


@dataclass(frozen=True)
class CorruptionAccuracyResult:
    """Accuracy per corruption and severity of one field on a released
    ImageNet-C, -C-bar or -3DCC dataset.

    Attributes:
        dataset: the dataset's name
        field: the prediction field
        benchmark: ``imagenet_c``, ``imagenet_cbar`` or ``imagenet_3dcc``
        title: its display name
        column: the published column that ``100 * mean_top1`` is
            (accuracies in percent)
        of_corruptions: the release's corruptions (the table's rows)
        accuracy: the table
        notes: what makes the mean not comparable with the published one
    """

    dataset: str
    field: str
    benchmark: str
    title: str
    column: str
    of_corruptions: int
    accuracy: CorruptionAccuracy
    notes: List[str] = dc_field(default_factory=list)
    table: str = _GAVRIKOV

    def to_dict(self) -> dict:
        """JSON-ready: the table, its means and the published column."""
        acc = self.accuracy.to_dict()
        mean = acc["mean_top1"]
        return {"dataset": self.dataset, "field": self.field, "benchmark": self.benchmark,
                "title": self.title, **acc, "column": self.column, "table": self.table,
                "column_value": None if mean is None else 100.0 * mean,
                "notes": list(self.notes)}


def corruption_accuracy_of(samples, field: str, gt_field: str = "ground_truth"
                           ) -> CorruptionAccuracyResult:
    """Top-1 and top-5 accuracy of ``field`` per corruption and severity of
    a released ImageNet-C, -C-bar or -3DCC dataset, and their unweighted
    mean over the cells (Gavrikov & Keuper's ``eval_imagenet_c.py``,
    ``eval_imagenet_cbar.py``; RobustBench's ``corruptions_evaluation``
    for ``corruptions_3d``). Top-5 needs the field's stored logits
    (``imagenetx predict --logits``); without them it is None. Images
    without a prediction are left out, as in the other tables.

    Args:
        samples: the dataset, view or dataset name
        field: the prediction field
        gt_field ("ground_truth"): the ground truth field

    Raises:
        ImageNetXError: for a dataset of another benchmark, a missing
            prediction field, or no prediction on any image
    """

    samples = get_dataset(samples)
    name = samples._dataset.name
    benchmark = get_benchmark(samples)
    if benchmark.name not in CORRUPTION_BENCHMARKS:
        raise ImageNetXError(
            f"Dataset '{name}' is not ImageNet-C, -C-bar or -3DCC: load the released "
            "folders as ImageNet-C, ImageNet-C-bar or ImageNet-3DCC from `dir=...`")
    if not samples.has_field(f"{field}.class_index"):
        raise ImageNetXError(
            f"Dataset '{name}' has no prediction field '{field}': predict it first "
            f"(`predict(field='{field}')`), or pass another `field`")
    settings = Settings(gt_field=gt_field)
    benchmark.check_fields(samples, settings)
    view = benchmark.base_view(samples, settings)
    corruption, severity, gt, pred = view.values(
        ["corruption", "severity", f"{gt_field}.class_index", f"{field}.class_index"])
    gt, pred = int_column(gt), int_column(pred)
    counted = (gt >= 0) & (pred >= 0)
    if not counted.any():
        raise ImageNetXError(
            f"Field '{field}' has no prediction on the {benchmark.title} samples of "
            f"'{name}': predict them with `predict()`, or pick another field")
    corruption = np.asarray(corruption, dtype=object)[counted]
    severity = np.asarray(severity)[counted]
    top1 = (pred == gt)[counted]
    top5 = _top5(view, field, counted, gt[counted])
    layout = benchmark.layout
    found = set(corruption)
    present = [c for c in layout.corruptions if c in found]
    table = corruption_accuracy(corruption, severity, top1, top5, present)
    notes = []
    if not table.complete or len(present) < len(layout.corruptions):
        notes.append(
            f"mean over {table.cells} corruption x severity cells; the published "
            f"{layout.column} averages {len(layout.corruptions) * len(SEVERITIES)}")
    if top5 is None:
        notes.append(f"no top-5: '{field}' has neither top5 nor logits for every image "
                     "(predict with `predict()`)")
    return CorruptionAccuracyResult(name, field, benchmark.name, benchmark.title,
                                    layout.column, len(layout.corruptions), table, notes,
                                    _TABLES.get(benchmark.name, _GAVRIKOV))


def _top5(view, field: str, counted: np.ndarray, gt: np.ndarray) -> Optional[np.ndarray]:
    """Whether the class is among each counted image's stored ``top5``
    (class indices, as ``predict`` writes them), else among its 5 highest
    stored logits; None unless every counted image has one or the other."""
    if len(view.exists(f"{field}.top5").limit(1)):  # declared or not
        top5 = [v for v, c in zip(view.values(f"{field}.top5", _raw=True), counted) if c]
        if all(v is not None and len(v) >= 5 for v in top5):
            return np.array([int(g) in v[:5] for g, v in zip(gt, top5)], dtype=bool)
    if not len(view.exists(f"{field}.logits").limit(1)):
        return None
    logits = [v for v, c in zip(view.values(f"{field}.logits"), counted) if c]
    if any(v is None for v in logits):
        return None
    scores = np.stack([np.asarray(v, dtype=np.float32) for v in logits])
    top = np.argpartition(-scores, 4, axis=1)[:, :5]
    return (top == gt[:, None]).any(axis=1)
