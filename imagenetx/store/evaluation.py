"""FiftyOne's own evaluation of a prediction field, under ``eval_<field>``.

``evaluate_classifications`` compares label strings. It agrees with
class-index correctness only when the ground truth and the predictions both
carry the unique labels of
:attr:`imagenetx.classes.imagenet.ClassTable.labels`, so a field is evaluated
only then; labels of earlier versions are migrated first where the class
index says what they are.
"""

from dataclasses import dataclass
from typing import Optional, Sequence

import fiftyone as fo
import fiftyone.utils.eval.classification as fouc

from imagenetx.classes.imagenet import class_table
from imagenetx.store.classifications import relabel_shared_names
from imagenetx.store.datasets import all_slices
from imagenetx.store.schema import eval_key_of


@dataclass
class Evaluation:
    """The outcome of :func:`evaluate_predictions`.

    Attributes:
        key: the eval key, None when nothing was evaluated
        evaluated: the samples evaluated
        accuracy: their accuracy, None when nothing was evaluated
        note: why nothing was evaluated, when there is a reason to tell
    """

    key: Optional[str] = None
    evaluated: int = 0
    accuracy: Optional[float] = None
    note: Optional[str] = None


def evaluate_predictions(
    dataset: fo.Dataset,
    field: str,
    gt_field: str = "ground_truth",
    rerun: bool = True,
    labels: Optional[Sequence[str]] = None,
) -> Evaluation:
    """Evaluates a prediction field against the ground truth, ``eval_<field>``.

    Samples with both fields are evaluated. Shared names that earlier
    versions wrote into ``field`` are made unique first. Ground truth with
    other labels (WordNet ids, indices, a shared name) is not evaluated: the
    result carries a note that says why, and a stale evaluation is deleted.

    Args:
        dataset: the dataset
        field: the ``fo.Classification`` prediction field
        gt_field ("ground_truth"): the ground truth field
        rerun (True): False reuses an existing evaluation under the key
        labels (None): the labels both fields use (a benchmark's own
            classes, e.g. the 16 cue-conflict categories); None: ImageNet's
            unique labels

    Returns:
        an :class:`Evaluation`, empty when either field is missing
    """
    gt = dataset.get_field(gt_field) if dataset.has_field(gt_field) else None
    if not (
        isinstance(gt, fo.EmbeddedDocumentField)
        and issubclass(gt.document_type, fo.Classification)
        and dataset.has_field(field)
    ):
        return Evaluation()
    key = eval_key_of(field)
    if not rerun and dataset.has_evaluation(key):
        results = dataset.load_evaluation_results(key)
    else:
        relabel_shared_names(dataset, [field])
        # every group slice of a grouped dataset
        view = all_slices(dataset).exists(field).exists(gt_field)
        if not len(view):
            return Evaluation()
        known = set(class_table().labels if labels is None else labels)
        other = [x for x in view.distinct(f"{gt_field}.label") if x not in known]
        if other:
            if dataset.has_evaluation(key):  # stale now
                dataset.delete_evaluation(key)
            return Evaluation(note=_not_evaluated(dataset, gt_field, other))
        results = view.evaluate_classifications(
            field, gt_field=gt_field, eval_key=key, progress=False
        )
    return Evaluation(
        key=key,
        evaluated=len(results.ytrue),
        accuracy=float(results.metrics()["accuracy"]),
    )


def _not_evaluated(dataset, gt_field: str, other: list) -> str:
    shared = [x for x in other if x in class_table().shared_names]
    if shared:
        return (
            f"Not evaluated: ground truth '{gt_field}' has labels that two "
            f"ImageNet classes share (e.g. '{shared[0]}'), as earlier "
            "versions wrote them: run `imagenetx tag --dataset "
            f"{dataset.name} --gt-field {gt_field}` to make them unique, "
            "then predict again to evaluate"
        )
    return (
        f"Not evaluated: ground truth '{gt_field}' has labels that are not "
        f"ImageNet class labels (e.g. '{other[0]}')"
    )


def rerun_evaluations(dataset: fo.Dataset, changed_fields) -> tuple:
    """Re-runs the evaluations that scored fields whose labels changed.

    A classification evaluation whose prediction or ground truth field is
    in ``changed_fields`` is stale. The project's own (key
    ``eval_<prediction field>``) is run again with
    :func:`evaluate_predictions`; any other is left alone and listed.

    Args:
        dataset: the dataset
        changed_fields: the fields whose labels changed

    Returns:
        ``(keys re-run, keys not re-run)``: the latter are left alone, or
        deleted when the ground truth cannot be evaluated any more
    """
    changed = set(changed_fields)
    rerun, left = [], []
    if not changed:
        return rerun, left
    for key in dataset.list_evaluations():
        config = dataset.get_evaluation_info(key).config
        if not isinstance(config, fouc.ClassificationEvaluationConfig):
            continue
        if not {config.pred_field, config.gt_field} & changed:
            continue
        if key == eval_key_of(config.pred_field) and evaluate_predictions(
            dataset, config.pred_field, config.gt_field
        ).key:
            rerun.append(key)
        else:
            left.append(key)
    return rerun, left
