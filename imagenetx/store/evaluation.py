"""FiftyOne's own evaluation of a prediction field, under ``eval_<field>``.

The evaluation is FiftyOne's ``simple`` classification evaluation, stored
as ``evaluate_classifications`` stores it (the same run config,
per-sample ``eval_<field>`` booleans, results and sidebar group, so the
Model Evaluation panel reads it; the results' class keeps their custom
metric on load: :class:`ClassificationResults`), computed faster
(:func:`evaluate_simple`): the columns come from one aggregation, the
per-sample field is set by one server-side update, and no per-sample Python
runs; under 1 s for 50,000 samples (``perf/evaluation.py``).

FiftyOne's evaluation compares label strings. It agrees with
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
from imagenetx.store.bulk import chunked
from imagenetx.store.changes import begin_write, finish_write
from imagenetx.store.datasets import all_slices
from imagenetx.store.indexes import ensure_indexes, prediction_index_paths
from imagenetx.store.schema import eval_key_of

#: sample ids per update command
ID_CHUNK = 100_000

#: the plugin's custom metric (``operators/evaluation_metric.py``), for
#: ``evaluate_classifications(..., custom_metrics=[ERROR_RATIO_METRIC])``; this
#: project's runs ask for it where :func:`imagenetx.benchmarks.error_ratio_metric` says
ERROR_RATIO_METRIC = "@imagenet-x/imagenet-x/error_ratio"


class ClassificationResults(fouc.ClassificationResults):
    """FiftyOne's classification results, loaded again with their custom
    metrics.

    FiftyOne 1.21-1.22 store ``custom_metrics`` with the results but their
    loader (``BaseClassificationResults._from_dict``) leaves them out, so
    the Model Evaluation panel, which loads the results, shows none.
    Results are loaded by the class name stored with them: results of this
    class keep their custom metrics (a FiftyOne without this package loads
    them as its own class, without them). Nothing else differs.
    """

    @classmethod
    def _from_dict(cls, d, samples, config, eval_key, **kwargs):
        results = super()._from_dict(d, samples, config, eval_key, **kwargs)
        if results.custom_metrics is None:
            results.custom_metrics = d.get("custom_metrics")
        return results


def keep_custom_metrics(results) -> None:
    """Makes FiftyOne's own classification results of a run that computes
    a custom metric (``evaluate_classifications(..., custom_metrics=...)``)
    stored as :class:`ClassificationResults`, so that loading them again
    keeps the metric. Results of any other class are left as they are."""
    if type(results) is fouc.ClassificationResults:
        results.__class__ = ClassificationResults


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


@dataclass
class Written:
    """What a predict run wrote besides its predictions: each predicted
    sample's ``eval_<field>`` value (``gt label == predicted label``), and
    the columns of those samples that the evaluation results hold.

    Attributes:
        columns: ``[ytrue, ytrue_ids, ypred, ypred_ids, confs]``, one entry
            per sample written that has a ground truth
        previous: whether the samples not written carry the values of a
            current evaluation (one under the same key, fields and labels
            existed before the run)
    """

    columns: list
    previous: bool


def can_write_with_predictions(dataset, field: str, gt_field: str) -> Optional[bool]:
    """Whether a predict run may write ``eval_<field>`` values with its
    predictions: None when not (no classification ground truth, another
    field under the key, or an evaluation of other fields under it), else
    whether a current evaluation exists (see :attr:`Written.previous`)."""
    if not is_classification(dataset, gt_field):
        return None
    key = eval_key_of(field)
    if dataset.has_evaluation(key):
        config = dataset.get_evaluation_info(key).config
        if (type(config) is not fouc.SimpleEvaluationConfig
                or (config.pred_field, config.gt_field) != (field, gt_field)):
            return None
        return True
    if dataset.has_field(key):
        return None  # a field of the user's, or left by a broken run
    return False


def is_classification(dataset, field: str) -> bool:
    """Whether ``field`` is a ``fo.Classification`` field of the dataset."""
    f = dataset.get_field(field) if dataset.has_field(field) else None
    return isinstance(f, fo.EmbeddedDocumentField) and issubclass(
        f.document_type, fo.Classification)


def evaluate_predictions(
    dataset: fo.Dataset,
    field: str,
    gt_field: str = "ground_truth",
    rerun: bool = True,
    labels: Optional[Sequence[str]] = None,
    written: Optional[Written] = None,
    custom_metrics: Optional[Sequence[str]] = None,
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
        written (None): what a predict run already wrote (its samples'
            values are not written again, and their columns not read)
        custom_metrics (None): the custom metrics' URIs to compute with it
            (a run's: :func:`imagenetx.benchmarks.error_ratio_metric`)

    Returns:
        an :class:`Evaluation`, empty when either field is missing, or
        when ``rerun`` is False and there is no evaluation to reuse
    """
    if not dataset.has_field(field):
        return Evaluation()
    if not is_classification(dataset, gt_field):
        return Evaluation(note=_no_ground_truth(dataset, gt_field))
    key = eval_key_of(field)
    if not rerun:  # nothing changed: reuse, never add
        if not dataset.has_evaluation(key):
            return Evaluation()
        results = dataset.load_evaluation_results(key)
    else:
        # every group slice of a grouped dataset
        view = all_slices(dataset).exists(field).exists(gt_field)
        if not len(view):  # say why, rather than nothing
            if not all_slices(dataset).exists(field).limit(1).count():
                return Evaluation(note=f"Not evaluated: no sample has a '{field}' "
                                       "prediction (none could be read)")
            return Evaluation(note=(
                f"Not evaluated: no sample with a '{field}' prediction has a "
                f"'{gt_field}' ground truth; give those samples one, or pass the field "
                "that holds it as `gt_field`"))
        known = set(class_table().labels if labels is None else labels)
        other = [x for x in view.distinct(f"{gt_field}.label") if x not in known]
        if other:
            if dataset.has_evaluation(key):  # stale now
                dataset.delete_evaluation(key)
            return Evaluation(note=_not_evaluated(dataset, gt_field, other))
        n_written = len(written.columns[0]) if written else 0
        if written and (written.previous or n_written == len(view)):
            columns = written.columns if n_written == len(view) else None
            results = evaluate_simple(view, field, gt_field, key, columns=columns,
                                      values_written=True, custom_metrics=custom_metrics)
        else:
            results = evaluate_simple(view, field, gt_field, key,
                                      custom_metrics=custom_metrics)
    return Evaluation(
        key=key,
        evaluated=len(results.ytrue),
        # metrics()["accuracy"] without sklearn's per-class work
        accuracy=float((results.ytrue == results.ypred).mean()) if len(results.ytrue) else 0.0,
    )


def evaluate_simple(samples, pred_field: str, gt_field: str, eval_key: str,
                    columns: Optional[list] = None, values_written: bool = False,
                    custom_metrics: Optional[Sequence[str]] = None):
    """``samples.evaluate_classifications(pred_field, gt_field=gt_field,
    eval_key=eval_key)`` with the same stored outcome, without its
    per-sample Python work.

    The run is registered, its per-sample field declared, its custom
    metrics computed, its results saved and its fields grouped by
    FiftyOne's own evaluation method; what differs is how the columns are
    read (one aggregation of raw values) and how ``eval_key`` is written
    (one update on the database, ``gt.label == pred.label``).

    Args:
        samples: a non-grouped collection (e.g. a flattened dataset) whose
            samples all have both fields
        pred_field: the ``fo.Classification`` prediction field
        gt_field: the ``fo.Classification`` ground truth field
        eval_key: the key
        columns (None): ``[ytrue, ytrue_ids, ypred, ypred_ids, confs]`` of
            the samples, when the caller has them; None reads them
        values_written (False): whether every sample already holds its
            ``eval_key`` value (written with the predictions): then the
            field is kept, not cleared and rewritten
        custom_metrics (None): the custom metrics' URIs to compute (e.g.
            ``[ERROR_RATIO_METRIC]``)

    Returns:
        the ``fiftyone.utils.eval.classification.ClassificationResults``
    """
    config = fouc._parse_config(pred_field, gt_field, "simple",
                                custom_metrics=list(custom_metrics) if custom_metrics else None)
    method = config.build()
    method.ensure_requirements()
    # cleanup would delete the field of an existing run under the key
    method.register_run(samples, eval_key, cleanup=not values_written)
    method.register_samples(samples, eval_key)

    gt_label, pred_label = f"{gt_field}.label", f"{pred_field}.label"
    if columns is None:
        columns = _columns(samples, [gt_label, f"{gt_field}._id", pred_label,
                                     f"{pred_field}._id", f"{pred_field}.confidence"])
    ytrue, ytrue_ids, ypred, ypred_ids, confs = columns
    results = ClassificationResults(
        samples, config, eval_key, ytrue, ypred,
        confs=confs, ytrue_ids=ytrue_ids, ypred_ids=ypred_ids, backend=method)
    if not values_written:
        _set_correct(samples, eval_key, gt_label, pred_label)
    method.compute_custom_metrics(samples, eval_key, results)
    _save_results(method, samples, eval_key, results)
    method.add_fields_to_sidebar_group(
        samples, eval_key, omit_fields=(pred_field, gt_field))
    # the panels and the mistakes views filter on them
    ensure_indexes(samples, prediction_index_paths(pred_field, eval_key))
    return results


def _save_results(method, samples, eval_key: str, results) -> None:
    """``method.save_run_results(samples, eval_key, results)``, encoded by
    the standard library's C JSON encoder: FiftyOne's ``json_util.dumps``
    converts each of the 5 x n values in Python first, and for plain JSON
    values (strings, numbers, None) writes the same text."""
    import json

    try:
        data = json.dumps(results.serialize()).encode()
    except TypeError:  # BSON values: FiftyOne's own way
        method.save_run_results(samples, eval_key, results)
        return
    run_doc = method._get_run_doc(samples, eval_key)
    if run_doc.results:
        run_doc.results.delete()  # GridFS keeps files until deleted
    run_doc.results.put(data, content_type="application/json")
    run_doc.results_meta = dict(results.get_meta() or {})
    getattr(samples._root_dataset, method._results_cache_field())[eval_key] = results
    run_doc.save()


def _columns(samples, paths: list) -> list:
    """The values of embedded ``paths`` of each sample in collection order,
    read by one aggregation (ObjectIds as strings, as ``values()`` gives)."""
    from bson import ObjectId

    project = {f"f{k}": f"${p}" for k, p in enumerate(paths)}
    rows = list(samples._aggregate(pipeline=[{"$project": {"_id": 0, **project}}]))
    out = []
    for k in range(len(paths)):
        column = [r.get(f"f{k}") for r in rows]
        if column and isinstance(column[0], ObjectId):
            column = [None if v is None else str(v) for v in column]
        out.append(column)
    return out


def _set_correct(samples, eval_key: str, gt_label: str, pred_label: str) -> None:
    """Writes ``eval_key = (gt label == predicted label)`` on the samples,
    as ``evaluate_classifications`` does, in one server-side update
    (recorded: :mod:`imagenetx.store.changes`)."""
    coll = samples._dataset._sample_collection
    ids = [d["_id"] for d in samples._aggregate(pipeline=[{"$project": {"_id": 1}}])]
    stamp = begin_write(samples._dataset, [eval_key])
    for part in chunked(ids, ID_CHUNK):  # a command stays under 16 MB
        coll.update_many(
            {"_id": {"$in": part}},
            [{"$set": {eval_key: {"$eq": [f"${gt_label}", f"${pred_label}"]},
                       "last_modified_at": stamp.expression()}}])
    finish_write(samples._dataset, stamp)


def _no_ground_truth(dataset, gt_field: str) -> str:
    """Why there is no evaluation when ``gt_field`` is no classification."""
    what = ("is not a ground-truth classification (it is a "
            f"{type(dataset.get_field(gt_field)).__name__})"
            if dataset.has_field(gt_field) else "does not exist")
    return (f"Not evaluated: field '{gt_field}' of dataset '{dataset.name}' {what}; the "
            "ground truth must be a fo.Classification whose label is the ImageNet class "
            "(`tag_dataset()` writes one): pass it as `gt_field`")


def _not_evaluated(dataset, gt_field: str, other: list) -> str:
    shared = [x for x in other if x in class_table().shared_names]
    if shared:
        return (
            f"Not evaluated: ground truth '{gt_field}' has labels that two "
            f"ImageNet classes share (e.g. '{shared[0]}'): tag the dataset "
            f"(`tag_dataset(gt_field='{gt_field}')`) to make them unique, "
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
            dataset, config.pred_field, config.gt_field,
            custom_metrics=config.custom_metrics,
        ).key:
            rerun.append(key)
        else:
            left.append(key)
    return rerun, left
