"""The analysis engine: a view -> one query -> scored arrays -> a reducer.

:func:`prepare` resolves the settings against the dataset's benchmark (its
slicing, label space and the samples that count), reads every column it
needs with one query, and scores each prediction field through the label
space. Everything else (:func:`compute_ratios`, :func:`mistakes_view`,
:func:`slice_accuracies`, the comparisons) starts from its result, so the
images and the correctness are the same everywhere: a mistake view's count
is always ``n - correct`` of its slice.
"""

import logging
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from imagenetx.analysis.columns import derived, float_column, read_columns
from imagenetx.analysis.results import SliceResults
from imagenetx.analysis.settings import Settings
from imagenetx.benchmarks import get_benchmark
from imagenetx.benchmarks.base import Benchmark, field_slicing
from imagenetx.classes.imagenet import class_table
from imagenetx.classes.spaces import LabelSpace, int_column
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.slices import SliceTable, slice_table
from imagenetx.metrics.slicing import Slicing
from imagenetx.metrics.summary import ErrorRatios, Scored
from imagenetx.store.datasets import get_dataset
from imagenetx.metrics.slices import cooccurrence, prevalence

logger = logging.getLogger(__name__)


@dataclass
class Prepared:
    """A view's columns, resolved and scored.

    Attributes:
        dataset_name: the dataset's name
        settings: the settings
        benchmark: the benchmark
        slicing: the slicing
        label_space: the label space
        group: the ``by`` slicing, or None
        view: the samples that count (before per-model filtering)
        membership: ``(n, k)`` image x slice
        classes: ``(n,)`` ground truth class index (-1 where none)
        group_ids: ``(n,)`` group index, or None
        correct, counted, confidence: per prediction field, ``(n,)``
        ids: the sample ids, when asked for
        extra: ``{name: (Slicing, (n, k) membership)}`` of the further
            slicings asked for (slice discovery intersects them)
        columns: every column read, by path (``extra_paths`` among them)
    """

    dataset_name: str
    settings: Settings
    benchmark: Benchmark
    slicing: Slicing
    label_space: LabelSpace
    group: Optional[Slicing]
    view: object
    membership: np.ndarray
    classes: np.ndarray
    group_ids: Optional[np.ndarray]
    correct: Dict[str, np.ndarray] = field(default_factory=dict)
    counted: Dict[str, np.ndarray] = field(default_factory=dict)
    confidence: Dict[str, np.ndarray] = field(default_factory=dict)
    ids: Optional[List[str]] = None
    extra: Dict[str, Tuple[Slicing, np.ndarray]] = field(default_factory=dict)
    columns: Dict[str, list] = field(default_factory=dict)

    def table(self, field: str, intervals: bool = False) -> SliceTable:
        """One field's per-slice accuracy over its counted images."""
        s = self.settings
        keep = self.counted[field]
        return slice_table(self.correct[field][keep], self.membership[keep],
                           self.slicing.values, intervals=intervals,
                           resamples=s.resamples, seed=s.seed, level=s.level)

    def in_slice(self, slice_value) -> np.ndarray:
        """``(n,)``: which images lie in slice ``slice_value``.

        Raises:
            ImageNetXError: for a value the slicing does not have
        """
        value = self.slicing.lookup(slice_value)
        if value is None:
            raise ImageNetXError(
                f"Unknown {self.slicing.label} '{slice_value}': use one of "
                f"{', '.join(map(str, self.slicing.values))}")
        return self.membership[:, self.slicing.index()[value]]

    def scored(self, field: str) -> Scored:
        """One field's counted images as a reducer's input."""
        keep = self.counted[field]
        return Scored(
            correct=self.correct[field][keep],
            membership=self.membership[keep],
            classes=self.classes[keep],
            confidence=self.confidence[field][keep],
            group_ids=None if self.group_ids is None else self.group_ids[keep],
        )


#: where ``dataset.info["imagenetx"]`` keeps the error slicings found in
#: embedding space (:mod:`imagenetx.analysis.embedding_slices`)
ERROR_SLICINGS = "error_slicings"


def stored_slicings(samples) -> dict:
    """``{key: record}`` of the error slicings stored on a dataset."""
    info = samples._dataset.info.get("imagenetx") or {}
    return dict(info.get(ERROR_SLICINGS) or {}) if isinstance(info, dict) else {}


def write_slicing_record(dataset, key: str, record: dict) -> None:
    """Keeps ``record`` as the error slicing ``key`` of ``dataset`` (read
    back by :func:`stored_slicings`)."""
    info = dict(dataset.info.get("imagenetx") or {})
    info[ERROR_SLICINGS] = {**(info.get(ERROR_SLICINGS) or {}), key: record}
    dataset.info["imagenetx"] = info
    dataset.save()


def _resolve_slicing(samples, benchmark, settings, name) -> Slicing:
    known = benchmark.slicing(samples, settings, name)
    if known is not None:
        return known
    stored = stored_slicings(samples).get(name)
    if stored is not None and samples.has_field(name):
        return Slicing(name=name, path=name, values=tuple(stored["values"]),
                       title="error slice")
    if not samples.has_field(name):
        offered = ", ".join(benchmark.slicing_names(samples, settings)) or "none"
        raise ImageNetXError(
            f"Unknown slicing '{name}': the {benchmark.title} slicings are "
            f"{offered}; or pass a categorical field of dataset "
            f"'{samples._dataset.name}' (e.g. tags)"
        )
    return field_slicing(samples, name)


def _counted_view(samples, benchmark: Benchmark, s: Settings):
    """The benchmark's samples, narrowed to ``s.within`` when set."""
    view = benchmark.base_view(samples, s)
    if s.within is None:
        return view
    within = _resolve_slicing(samples, benchmark, s, s.within[0])
    value = within.lookup(s.within[1])
    if value is None:
        raise ImageNetXError(
            f"Unknown {within.label} '{s.within[1]}': use one of "
            f"{', '.join(map(str, within.values))}")
    return view.match({within.path: value})


def _check_pred_fields(samples, pred_fields) -> list:
    if isinstance(pred_fields, str):
        pred_fields = [pred_fields]
    pred_fields = list(pred_fields or [])
    if not pred_fields:
        raise ImageNetXError("Pass at least one prediction field")
    if len(set(pred_fields)) != len(pred_fields):
        raise ImageNetXError(f"Prediction fields repeat: {', '.join(pred_fields)}")
    name = samples._dataset.name
    for f in pred_fields:
        if not samples.has_field(f):
            raise ImageNetXError(
                f"Dataset '{name}' has no prediction field '{f}': run "
                "`predict()`, import predictions with `import_predictions()`, or pass "
                "an existing field")
        if not samples.has_field(f"{f}.class_index") and not samples.has_field(f"{f}.label"):
            raise ImageNetXError(
                f"Field '{f}' of dataset '{name}' has no class_index or label: it must "
                "be a fo.Classification (written by `predict()`, `import_predictions()`, "
                "FiftyOne's apply_model, or with a label)")
    return pred_fields


def prepare(samples, pred_fields, settings: Settings = None, ids: bool = False,
            extra_slicings: Sequence[str] = (), extra_paths: Sequence[str] = (),
            **kwargs) -> Prepared:
    """Resolves the settings, reads the view once and scores each field.

    Args:
        samples: a dataset, view, or dataset name
        pred_fields: one prediction field or a list of them
        settings (None): a :class:`Settings`; ``kwargs`` override it
        ids (False): also read the sample ids
        extra_slicings (()): further slicings to read in the same query
            (:attr:`Prepared.extra`)
        extra_paths (()): further field paths to read in the same query
            (:attr:`Prepared.columns`)

    Raises:
        ImageNetXError: for an unknown slicing, label space, value or field,
            or a view without the benchmark's samples
    """
    s = Settings.create(settings, **kwargs)
    samples = get_dataset(samples)
    name = samples._dataset.name
    benchmark = get_benchmark(samples, s.benchmark, s)
    benchmark.check_fields(samples, s)
    pred_fields = _check_pred_fields(samples, pred_fields)

    slicing_name = s.slicing or benchmark.default_slicing
    if slicing_name is None:
        raise ImageNetXError(
            f"Dataset '{name}' is not a known benchmark's: name a slicing, "
            "a categorical field such as `slicing=tags`")
    slicing = _resolve_slicing(samples, benchmark, s, slicing_name)
    spaces = benchmark.label_spaces(s)
    correct = s.correct or benchmark.default_label_space
    if correct not in spaces:
        raise ImageNetXError(
            f"Unknown correctness '{correct}' for {benchmark.title}: use one of "
            f"{', '.join(spaces)}")
    space = spaces[correct]

    view = _counted_view(samples, benchmark, s)
    group = None
    if s.by is not None:
        group = _resolve_slicing(samples, benchmark, s, s.by)
        if group.multi:
            raise ImageNetXError(
                f"by='{s.by}' is multi-valued: group by a single-valued slicing")

    extra = [_resolve_slicing(samples, benchmark, s, e) for e in extra_slicings]
    gt_path = f"{s.gt_field}.class_index"
    paths = [slicing.path, gt_path, *space.sample_paths(), *(e.path for e in extra),
             *extra_paths]
    if group is not None:
        paths.append(group.path)
    by_label = [f for f in pred_fields if not samples.has_field(f"{f}.class_index")]
    for f in pred_fields:
        paths += [*space.model_paths(f), f"{f}.confidence"]
    paths += [f"{f}.label" for f in by_label] + ([f"{s.gt_field}.label"] if by_label else [])
    columns = read_columns(view, paths, ids=ids)
    if by_label:
        columns = dict(columns)  # the cache's lists stay as read
        for f in by_label:
            columns[f"{f}.class_index"] = _indices_by_label(
                name, f, columns[f"{f}.label"], columns[f"{s.gt_field}.label"],
                columns[gt_path])
    n = len(columns[gt_path])
    if not n:
        raise ImageNetXError(
            f"No {benchmark.title} samples in '{name}' (this view): widen the "
            "view or its filters, or load the benchmark's annotations "
            "(`tag_dataset()` for ImageNet images, `Benchmark.load()`)")
    # what is computed from each column is kept while the column is the same
    # list (read_columns keeps unchanged columns): after a write of one
    # field, only that field is scored again
    classes = derived("int_column", [columns[gt_path]], lambda: int_column(columns[gt_path]))
    if not (classes >= 0).any():
        raise ImageNetXError(
            f"No sample of '{name}' (this view) has a ground truth "
            f"'{gt_path}': run `tag_dataset()` or `Benchmark.load()`, or pass "
            "`gt_field`")
    group_ids = None
    if group is not None:
        group_ids = group.ids(columns[group.path])
        if (group_ids < 0).any():
            raise ImageNetXError(
                f"{int((group_ids < 0).sum()):,} samples of '{name}' (this "
                f"view) have no '{group.path}' value: group by a field every "
                "sample has, or narrow the view with `within`")

    membership = derived(
        "membership", [columns[slicing.path]],
        lambda: slicing.membership(columns[slicing.path]),
        (slicing.name, slicing.path, slicing.multi, tuple(map(str, slicing.values))))
    out = Prepared(name, s, benchmark, slicing, space, group, view, membership, classes,
                   group_ids, ids=columns.get("id"),
                   extra={e.name: (e, e.membership(columns[e.path])) for e in extra},
                   columns=columns)
    for f in pred_fields:
        used = [columns[p] for p in [*space.sample_paths(), *space.model_paths(f)]]
        is_correct, counted = derived("score", [*used, classes],
                                      lambda: _score(space, f, columns, classes), (s, f))
        if not counted.any():
            raise ImageNetXError(
                f"Field '{f}' has no prediction on the {benchmark.title} "
                f"samples of '{name}' (this view): predict them with "
                "`predict()`, or pick another field")
        out.correct[f] = is_correct
        out.counted[f] = counted
        confidence = columns[f"{f}.confidence"]
        out.confidence[f] = derived("float_column", [confidence],
                                    lambda: float_column(confidence))
    return out


def _indices_by_label(name: str, field: str, labels: list, gt_labels: list,
                      gt_indices: list) -> list:
    """A labels-only prediction field's class indices: each label's index
    in the ground truth (the ``class_index`` its samples' ground truth gives
    that label). A label the ground truth never gives is wrong wherever it
    is predicted, and said in one logged line: it takes its ImageNet index
    when it names an ImageNet class, else an index the ground truth never
    uses."""
    index = {g: int(i) for g, i in zip(gt_labels, gt_indices)
             if g is not None and i is not None}
    outside = sorted({str(v) for v in labels if v is not None and v not in index})
    if outside:
        logger.warning(
            "Field '%s' of dataset '%s' predicts %d label(s) the ground truth never gives "
            "(%s%s): counted as wrong", field, name, len(outside),
            ", ".join(repr(v) for v in outside[:3]), ", ..." if len(outside) > 3 else "")
        names = class_table().names
        used = set(index.values())
        free = (i for i in range(10 ** 9) if i not in used)
        for v in outside:
            imagenet = names.index(v) if v in names else -1
            index[v] = imagenet if imagenet >= 0 and imagenet not in used else next(free)
            used.add(index[v])
    return [None if v is None else index[v] for v in labels]


def _score(space: LabelSpace, field: str, columns: Dict[str, list],
           classes: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(correct, counted)`` of one field: images with a ground truth and
    a prediction, scored by the label space."""
    is_correct, counted = space.score(field, columns)
    counted &= classes >= 0
    return is_correct & counted, counted


def compute_ratios(samples, pred_fields, settings: Settings = None,
                   **kwargs) -> SliceResults:
    """Per-slice accuracy, error ratio and interval of prediction fields.

    One ``values()`` query reads every field of every model; the statistics
    are :mod:`imagenetx.metrics`. On ImageNet-X with ``correct="class"``,
    ``"metaclass"`` or ``"real"`` in ``"paper"`` mode, the numbers equal the
    original ``imagenet_x`` toolkit's tables.

    Args:
        samples: a dataset, view, or dataset name
        pred_fields: one prediction field or a list of them
            (``fo.Classification`` with ``class_index``)
        settings (None): a :class:`~imagenetx.analysis.settings.Settings`;
            keyword arguments override it (``slicing``, ``correct``,
            ``within``, ``by``, ``intervals``, ...)

    Returns:
        a :class:`~imagenetx.analysis.results.SliceResults`
        (``.to_dict()`` is JSON-ready)
    """
    p = prepare(samples, pred_fields, settings, **kwargs)
    s = p.settings
    reducer = ErrorRatios(intervals=s.intervals, resamples=s.resamples,
                          seed=s.seed, level=s.level)
    scored = {f: p.scored(f) for f in p.correct}
    names = tuple(p.slicing.values)
    groups = None if p.group is None else tuple(p.group.values)
    worst = reducer.worst_classes(scored)
    # a field whose columns did not change keeps its summary (the bootstrap
    # intervals are most of the time): see imagenetx.analysis.columns.derived
    models = {f: derived("summary", [p.correct[f], p.counted[f], p.membership, p.classes,
                                     p.confidence[f], p.group_ids],
                         lambda f=f: reducer.summarize(scored[f], names, groups, worst[f]),
                         (reducer, names, groups, repr(worst[f])))
              for f in scored}
    return SliceResults(p.dataset_name, p.benchmark, s, p.slicing,
                        p.label_space.name, p.group, models)


def slice_accuracies(samples, pred_field: str, settings: Settings = None,
                     **kwargs) -> SliceTable:
    """Per-slice accuracy of one prediction field as a
    :class:`~imagenetx.metrics.slices.SliceTable` (same images and
    correctness as :func:`compute_ratios`; ``intervals`` defaults to False
    here)."""
    kwargs.setdefault("intervals", False)
    p = prepare(samples, [pred_field], settings, **kwargs)
    return p.table(pred_field, intervals=p.settings.intervals)



def mistakes_view(samples, pred_field: str, slice_value=None,
                  settings: Settings = None, **kwargs):
    """The samples of a slice that ``pred_field`` gets wrong.

    Correctness comes from the same label space as :func:`compute_ratios`
    with the same settings, so the count is ``n - correct`` of that slice.

    Args:
        samples: a dataset, view, or dataset name
        pred_field: the prediction field
        slice_value (None): a value of the slicing (e.g. ``"texture"``);
            None: the mistakes of every slice
        settings (None): as in :func:`compute_ratios`, with keyword overrides

    Returns:
        a :class:`fiftyone.core.view.DatasetView` (the base view with a
        ``select`` of the misclassified samples)
    """
    kwargs["intervals"] = False
    p = prepare(samples, [pred_field], settings, ids=True, **kwargs)
    wrong = p.counted[pred_field] & ~p.correct[pred_field]
    if slice_value is not None:
        wrong &= p.in_slice(slice_value)
    ids = [i for i, w in zip(p.ids, wrong) if w]
    return p.view.select(ids)


def slice_prevalence(samples, settings: Settings = None,
                     split_path: str = None, **kwargs) -> dict:
    """How common each slice is in a view, and how slices co-occur (the
    ImageNet-X paper's Figures 2 and 8), without any model.

    Args:
        samples: a dataset, view, or dataset name
        settings (None): as in :func:`compute_ratios`
        split_path (None): a field to split the prevalence by (e.g.
            ``imagenetx.split``)

    Returns:
        ``{"slicing", "values", "n", "prevalence": {split: [share per
        slice]}, "cooccurrence": k x k P(column | row)}``
    """

    s = Settings.create(settings, **kwargs)
    samples = get_dataset(samples)
    benchmark = get_benchmark(samples, s.benchmark, s)
    name = s.slicing or benchmark.default_slicing
    if name is None:
        raise ImageNetXError("Name a slicing: a categorical field such as tags")
    slicing = _resolve_slicing(samples, benchmark, s, name)
    view = _counted_view(samples, benchmark, s)
    paths = [slicing.path] + ([split_path] if split_path else [])
    columns = read_columns(view, paths)
    membership = slicing.membership(columns[slicing.path])
    splits = {"all": np.ones(len(membership), bool)}
    if split_path:
        values = np.array([str(v) for v in columns[split_path]])
        splits = {v: values == v for v in sorted(set(values))}
    return {
        "slicing": slicing.name,
        "values": list(slicing.values),
        "n": len(membership),
        "prevalence": {k: prevalence(membership[m]).tolist()
                       for k, m in splits.items() if m.any()},
        "cooccurrence": cooccurrence(membership).round(6).tolist(),
    }


def default_correct(samples, label_spaces, fallback: str) -> str:
    """The correctness the App's forms and panel start from: the dataset's
    own choice in ``dataset.info["imagenetx"]["default_correct"]`` (the demo
    asks for ReaL, its prediction field being ImageNet's own labels) when
    its benchmark offers it, else the benchmark's default."""
    info = samples._dataset.info.get("imagenetx") or {}
    wanted = info.get("default_correct", info.get("panel_correct")) \
        if isinstance(info, dict) else None
    return wanted if wanted in label_spaces else fallback


def analysis_options(samples, settings: Settings = None, values_of: str = None,
                     **kwargs) -> dict:
    """What the App forms and panel offer for a dataset: its benchmark's
    slicings, label spaces and group slicing.

    Args:
        samples: a dataset, view, or dataset name
        settings (None): a :class:`Settings`, with keyword overrides
        values_of (None): also read the values of this slicing (those of
            the default and the group slicing are always there)

    Returns:
        ``{"benchmark", "title", "slicings": {name: [values] or None (not
        read)}, "default_slicing", "slice_titles": {name: title},
        "label_spaces": [names], "default_correct", "group_slicing",
        "has_ground_truth"}``
    """
    s = Settings.create(settings, **kwargs)
    samples = get_dataset(samples)
    benchmark = get_benchmark(samples, s.benchmark, s)
    names = [n for n in benchmark.slicing_names(samples, s)
             if n != "nuisance_value" or samples.has_field(n)]
    if "tags" not in names and samples.has_field("tags"):
        names.append("tags")
    # error slicings found in embedding space: beside the benchmark's
    # slicings, and in place of them where the benchmark has none
    found = [n for n in stored_slicings(samples) if samples.has_field(n) and n not in names]
    names = found + names if benchmark.default_slicing is None else names + found
    default = benchmark.default_slicing or (names[0] if names else None)
    slicings, titles = {}, {}
    for name in names:
        if name in (default, benchmark.group_slicing, values_of):
            slicing = _resolve_slicing(samples, benchmark, s, name)
            slicings[name] = [str(v) for v in slicing.values]
            titles[name] = slicing.label
        else:
            slicings[name] = None
            titles[name] = name
    return {
        "benchmark": benchmark.name,
        "title": benchmark.title,
        "slicings": slicings,
        "slice_titles": titles,
        "default_slicing": default,
        "label_spaces": list(benchmark.label_spaces(s)),
        "default_correct": default_correct(samples, benchmark.label_spaces(s),
                                           benchmark.default_label_space),
        "group_slicing": benchmark.group_slicing,
        "has_ground_truth": samples.has_field(f"{s.gt_field}.class_index"),
    }
