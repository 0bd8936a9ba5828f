"""Attach ImageNet-X to the samples of a FiftyOne dataset by file name.

This writes the project's data contract (docs/data-contract.md):

-   ``ground_truth``: a ``fo.Classification`` with the class's unique label
    and ``class_index``, added where missing; an existing label that two
    classes share (``crane``) is made unique (``crane (bird)``)
-   one ``x:<factor>`` sample tag, the image's top factor
-   an ``imagenetx`` embedded document with the ImageNet-X labels

Labels that earlier versions wrote as a name two classes share are made
unique in the ground truth and in every ``fo.Classification`` field with
``class_index`` (each such field is read for them once per dataset: a
migration of data from before the first release), and the project's
evaluations of those fields run again.

All reads happen in one query and all writes are bulk writes of the samples
that actually change, so a second run changes nothing: no sample, and no
index or Model Evaluation scenario (made again only where one is missing).
"""

import functools
import itertools
import os
from dataclasses import dataclass, field

import fiftyone as fo
from fiftyone import ViewField as F
from fiftyone.core.expressions import ViewExpression
import numpy as np
from imagenetx.benchmarks import get_benchmark
from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.benchmarks.scenarios import FieldNames
from imagenetx.store.bulk import chunked, write_raw
from imagenetx.store.datasets import all_slices, get_dataset
from imagenetx.errors import ImageNetXError
from imagenetx.classes.imagenet import class_table
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.classes.labels import label_candidates, labels_to_indices
from imagenetx.memory import gc_paused
from imagenetx.store.evaluation import rerun_evaluations
from imagenetx.store.schema import (
    IMAGENETX_SUBFIELDS,
    check_field_type,
    declare_classification,
    declare_imagenetx_field,
    raw_classification,
)

DEFAULT_GT_FIELD = "ground_truth"
DEFAULT_TAG_PREFIX = "x:"
DEFAULT_FIELD = "imagenetx"

@dataclass
class TagSummary:
    """What :func:`tag_dataset` found and wrote."""

    dataset: str
    samples: int
    annotated: int
    by_split: dict = field(default_factory=dict)
    ground_truth_added: int = 0
    samples_written: int = 0
    #: labels made unique per field (names two classes share, as earlier
    #: versions wrote them)
    labels_made_unique: dict = field(default_factory=dict)
    #: evaluations re-run because a field they score changed
    evaluations_rerun: list = field(default_factory=list)
    #: stale evaluations not re-run (not the project's ``eval_<field>``, or
    #: deleted because the ground truth cannot be evaluated)
    evaluations_not_rerun: list = field(default_factory=list)

    @property
    def unannotated(self) -> int:
        return self.samples - self.annotated

    def add(self, other: "TagSummary") -> None:
        """Adds the counts of another part of the same new samples
        (:func:`new_sample_annotations` of a further batch)."""
        self.samples += other.samples
        self.annotated += other.annotated
        self.samples_written += other.samples_written
        for split, n in other.by_split.items():
            self.by_split[split] = self.by_split.get(split, 0) + n

    def __str__(self):
        splits = ", ".join(f"{n:,} {s}" for s, n in self.by_split.items())
        return (
            f"Dataset '{self.dataset}': {self.samples:,} samples, "
            f"{self.annotated:,} with ImageNet-X annotations"
            + (f" ({splits})" if splits else "")
            + f", {self.unannotated:,} without; "
            f"{self.ground_truth_added:,} ground truth labels added, "
            f"{self.samples_written:,} samples updated"
            + "".join(
                f"; {n:,} '{f}' labels made unique"
                for f, n in self.labels_made_unique.items()
            )
            + (
                "; evaluations re-run: " + ", ".join(self.evaluations_rerun)
                if self.evaluations_rerun
                else ""
            )
            + (
                "; stale evaluations not re-run: "
                + ", ".join(self.evaluations_not_rerun)
                if self.evaluations_not_rerun
                else ""
            )
        )


def factor_tag(factor: str, prefix: str = DEFAULT_TAG_PREFIX) -> str:
    """Returns the sample tag of a factor, ``x:texture`` by default."""
    return prefix + factor


@gc_paused()
def tag_dataset(
    dataset,
    gt_field: str = DEFAULT_GT_FIELD,
    tag_prefix: str = DEFAULT_TAG_PREFIX,
    field_name: str = DEFAULT_FIELD,
    by_stem: bool = False,
    require_match: bool = False,
) -> TagSummary:
    """Attaches ImageNet-X to the samples of a dataset, matched by file name.

    Samples whose file name (``ILSVRC2012_val_XXXXXXXX.JPEG`` or
    ``nXXXXXXXX_NNNN.JPEG``) has an ImageNet-X annotation (on a grouped
    dataset: the samples of all its group slices) get ground truth
    where missing (existing labels are mapped to class indices, whatever
    scheme they use), an ``x:<factor>`` tag and the ``imagenetx`` field.
    ImageNet images it does not annotate (1,132 of the 50,000 val images)
    get ground truth where missing, from their file name (ImageNet's val
    labels, the train folder's WordNet id), so whole-set numbers count them.
    Other samples are counted and keep their tags and fields, except labels
    of earlier versions: a name two classes share (``crane``) becomes the
    unique label (``crane (bird)``) in the ground truth of annotated
    samples, and wherever a ``fo.Classification`` field's ``class_index``
    says which class it is (a prediction field the first time a tag sees it
    on the dataset); evaluations of the changed fields run again.

    Args:
        dataset: a dataset or the name of one
        gt_field ("ground_truth"): the ``fo.Classification`` ground truth
        tag_prefix ("x:"): the prefix of the top-factor tags
        field_name ("imagenetx"): the embedded document field to write
        by_stem (False): match by file stem whatever the extension, so
            that edited copies of a val image (``ILSVRC2012_val_XXXXXXXX.png``)
            get its annotations
        require_match (False): refuse a dataset none of whose file names
            ImageNet-X annotates (``imagenetx tag``: a tag of nothing is a
            mistake), before anything is written

    Returns:
        a :class:`TagSummary`

    Raises:
        ImageNetXError: before anything is written, if the ground truth
            field is not a classification or holds unmappable labels
    """
    # every group slice of a grouped dataset (e.g. an original and its edits)
    dataset = all_slices(get_dataset(dataset))
    check_field_type(dataset, gt_field, fo.Classification, "gt_field")
    check_field_type(dataset, field_name, fo.DynamicEmbeddedDocument, "field")
    if not tag_prefix:
        raise ImageNetXError("The tag prefix must not be empty (default 'x:')")

    has_gt = dataset.has_field(gt_field)
    has_field = dataset.has_field(field_name)
    fields = ["_id", "filepath", "tags"]
    if has_gt:
        fields.append(gt_field)
    if has_field:
        fields.append(field_name)
    # one array per sample decodes about twice as fast as one list per field
    rows = dataset.values(ViewExpression([F(f) for f in fields]), _raw=True)
    columns = list(zip(*rows)) if rows else [()] * len(fields)
    del rows
    ids = columns[0]  # ObjectIds
    names = [os.path.basename(p) for p in columns[1]]
    if by_stem:
        names = [os.path.splitext(n)[0] + ".JPEG" for n in names]
    tags = columns[2]
    gts = columns[3] if has_gt else [None] * len(ids)
    current = columns[-1] if has_field else [None] * len(ids)

    rows = _locate(names)  # (split, row) or None per sample
    annotated = [i for i, r in enumerate(rows) if r is not None]
    if require_match and not annotated:
        shown = ", ".join(sorted(set(names))[:3]) or "(none: it has no samples)"
        raise ImageNetXError(
            f"None of the {len(names):,} file names of dataset '{dataset._dataset.name}' is "
            f"an image ImageNet-X annotates (they look like {shown}); it annotates ImageNet "
            "val and train images by their original names (ILSVRC2012_val_00000001.JPEG, "
            "n01440764_10026.JPEG): load the images as ImageNet-X from `dir=...`, "
            "or pass `by_stem=True` when only the extension differs")
    summary = TagSummary(dataset._dataset.name, len(ids), len(annotated))
    for i in annotated:
        split = rows[i][0]
        summary.by_split[split] = summary.by_split.get(split, 0) + 1

    # map every existing label first: an unmappable one raises before any
    # write, leaving the dataset as it was
    class_of = {
        split: anno.load_split(split).class_index.tolist()
        for split in summary.by_split
    }
    gt_index = _map_ground_truth(gts, rows, annotated, gt_field, class_of)
    shared = {
        label
        for label in {gts[i]["label"] for i in gt_index}
        if len(label_candidates(label)) > 1
    }
    factor_tags = {factor_tag(f, tag_prefix) for f in FACTORS}
    labels_of_class = class_table().labels
    class_path = f"{gt_field}.class_index"
    label_path = f"{gt_field}.label"
    made_unique = 0

    def updates_of(chunk):
        nonlocal made_unique
        updates = {}
        for i in chunk:
            split, row = rows[i]
            update = {}
            index = gt_index.get(i)
            if index is None:
                index = class_of[split][row]
                update[gt_field] = raw_classification(
                    labels_of_class[index], index
                )
                summary.ground_truth_added += 1
            else:
                if gts[i].get("class_index") != index:
                    update[class_path] = index
                if (gts[i]["label"] in shared
                        and gts[i]["label"] != labels_of_class[index]):
                    update[label_path] = labels_of_class[index]
                    made_unique += 1

            wanted = _documents(split)[row]
            stored = current[i]
            # as written, else with the user's extra keys, which are kept
            if stored != wanted and (stored is None or _strip(stored) != wanted):
                update[field_name] = wanted

            top = wanted["top_factor"]
            old_tags = tags[i]
            if old_tags or top:
                new_tags = [t for t in old_tags or () if t not in factor_tags]
                if top:
                    new_tags.append(tag_prefix + top)
                if new_tags != old_tags:
                    update["tags"] = new_tags
            if update:
                updates[ids[i]] = update
        return updates

    # ImageNet images ImageNet-X does not annotate (1,132 of the 50,000 val
    # images) still count in whole-set numbers: their file name says the class
    unlabeled = [
        i for i, r in enumerate(rows)
        if r is None and not (gts[i] and gts[i].get("label"))
        and anno.class_of_file(names[i]) is not None
    ]

    def ground_truth_of(chunk):
        summary.ground_truth_added += len(chunk)
        return {ids[i]: {gt_field: raw_classification(
                    labels_of_class[k], k)}
                for i, k in ((i, anno.class_of_file(names[i])) for i in chunk)}

    declare_classification(dataset._dataset, gt_field)
    declare_imagenetx_field(dataset._dataset, field_name)
    summary.samples_written = write_raw(
        dataset._dataset,
        itertools.chain(map(updates_of, chunked(annotated)),
                        map(ground_truth_of, chunked(unlabeled))),
    )

    relabeled = {gt_field: made_unique} if made_unique else {}
    summary.labels_made_unique = relabeled
    rerun, left = rerun_evaluations(dataset._dataset, relabeled)
    summary.evaluations_rerun = rerun
    summary.evaluations_not_rerun = left
    settings = FieldNames(gt_field=gt_field, field_name=field_name)
    # scenarios and indexes: worked out again only when something changed
    get_benchmark(dataset, settings=settings).tagged(
        dataset._dataset, settings, changed=bool(summary.samples_written or relabeled))
    return summary


def new_sample_annotations(
    dataset_name: str,
    names: list,
    tag_prefix: str = DEFAULT_TAG_PREFIX,
    field_name: str = DEFAULT_FIELD,
    by_stem: bool = False,
    split: str = None,
):
    """What :func:`tag_dataset` would write on new samples that carry their
    ground truth, computed before they are inserted.

    A loader puts these fields in the same documents as the rest, so a new
    dataset needs no second pass; declare ``field_name`` with
    :func:`~imagenetx.store.schema.declare_imagenetx_field`.

    Args:
        dataset_name: the dataset's name, for the summary
        names: the file name of each new sample
        tag_prefix ("x:"): the prefix of the top-factor tags
        field_name ("imagenetx"): the embedded document field
        by_stem (False): match by file stem whatever the extension
        split (None): the split of every name, where the caller has
            already matched them (a dict lookup per name instead of a
            pattern match)

    Returns:
        ``(fields, summary)``: per name, a dict with ``tags`` and
        ``field_name`` in stored form, or None for a file without
        annotation; and the :class:`TagSummary` that :func:`tag_dataset`
        would return
    """
    if not tag_prefix:
        raise ImageNetXError("The tag prefix must not be empty (default 'x:')")
    if by_stem:
        names = [os.path.splitext(n)[0] + ".JPEG" for n in names]
    if split is None:
        located = _locate(names)
    else:
        row_of = anno.load_split(split).row_of
        located = [
            None if row is None else (split, row)
            for row in map(row_of.get, names)
        ]
    summary = TagSummary(dataset_name, len(names), 0)
    fields = []
    for where in located:
        if where is None:
            fields.append(None)
            continue
        split, row = where
        summary.by_split[split] = summary.by_split.get(split, 0) + 1
        doc = _documents(split)[row]
        top = doc["top_factor"]
        fields.append({"tags": [tag_prefix + top] if top else [], field_name: doc})
    summary.annotated = summary.samples_written = sum(summary.by_split.values())
    return fields, summary


def warm_annotations(split: str) -> None:
    """Loads what :func:`new_sample_annotations` reads for a split, so that a
    loader can do it while it waits on something else (downloads)."""
    anno.load_split(split).row_of
    _documents(split)


def _locate(names: list) -> list:
    """(split, row) of each file name in the annotations, else None."""
    rows_of = {}
    located = []
    for name in names:
        # a name of a split already seen is one dict lookup, no pattern match
        for split, row_of in rows_of.items():
            row = row_of.get(name)
            if row is not None:
                located.append((split, row))
                break
        else:
            split = anno.split_of(name)
            if split is None:
                located.append(None)
                continue
            if split not in rows_of:
                rows_of[split] = anno.load_split(split).row_of
            row = rows_of[split].get(name)
            located.append(None if row is None else (split, row))
    return located


def _map_ground_truth(gts, rows, annotated, gt_field, class_of) -> dict:
    """{sample position: class index} of the existing ground truth labels.

    Args:
        class_of: ``{split: class index of each annotation row}``, which
            settles names two classes share

    Raises:
        ImageNetXError: if any label cannot be mapped to an ImageNet class
    """
    present = [i for i in annotated if gts[i] and gts[i].get("label")]
    if not present:
        return {}
    indices = labels_to_indices(
        [gts[i]["label"] for i in present],
        hints=[class_of[rows[i][0]][rows[i][1]] for i in present],
        source=f"field '{gt_field}.label'",
    )
    return dict(zip(present, indices.tolist()))


@functools.lru_cache(maxsize=None)
@gc_paused()
def _documents(split: str) -> list:
    """The stored ``imagenetx`` document of every annotated image of a
    split, shared by all writes (they are only encoded, never changed)."""
    split_anno = anno.load_split(split)
    metaclass = np.array(class_table().metaclass, dtype=object)
    metaclasses = metaclass[split_anno.class_index]
    if split == "val":
        real = anno.real_labels()
        numbers = [anno.val_number(n) for n in split_anno.file_names]
        real_labels = [list(real[k - 1]) for k in numbers]
    else:
        real_labels = [None] * len(split_anno)
    return [
        {
            "_cls": "DynamicEmbeddedDocument",
            "top_factor": top,
            "factors": factors,
            "metaclass": mc,
            "justification": justification,
            "one_word": one_word,
            "prototype": bool(prototype),
            "split": split,
            "real_labels": real_row,
        }
        for top, factors, mc, justification, one_word, prototype, real_row in zip(
            split_anno.top_factor,
            split_anno.factor_lists(),
            metaclasses,
            split_anno.justification,
            split_anno.one_word,
            split_anno.prototype,
            real_labels,
        )
    ]


def _strip(raw: dict) -> dict:
    """The data contract's part of a stored ``imagenetx`` document."""
    return {k: raw.get(k) for k in ("_cls", *IMAGENETX_SUBFIELDS)}
