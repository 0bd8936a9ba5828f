"""Bulk writes of ImageNet ``fo.Classification`` labels.

Every label the project writes is the class's unique label
(:attr:`imagenetx.classes.imagenet.ClassTable.labels`): FiftyOne's
evaluation compares label strings, so a name that two classes share would
count their confusions as correct.
"""

from typing import Sequence

import fiftyone as fo
from bson import ObjectId
from fiftyone.operators.store import ExecutionStore

from imagenetx.classes.imagenet import class_table
from imagenetx.store.bulk import chunked, write_raw
from imagenetx.store.schema import declare_classification, raw_classification

#: the execution store, per dataset, of the fields whose labels
#: :func:`relabel_shared_names_once` already made unique
MIGRATION_STORE = "imagenetx_migrations"
SHARED_NAMES_KEY = "shared_names_checked"


def write_classifications(
    dataset: fo.Dataset, field: str, ids: list, class_indices,
    labels: Sequence[str] = None, **attributes
) -> None:
    """Writes ``fo.Classification`` labels with ``class_index`` in bulk.

    Args:
        dataset: the dataset
        field: the field to write
        ids: the sample ids
        class_indices: the class index of each sample
        labels (None): the label of each class index; None: ImageNet-1k's
            unique labels
        **attributes: further attributes, each a list aligned with ``ids``
    """
    labels = class_table().labels if labels is None else labels
    declare_classification(dataset, field)
    pairs = list(zip(ids, class_indices, *attributes.values()))
    keys = list(attributes)

    def batch(chunk):
        return {
            ObjectId(sample_id): {
                field: raw_classification(
                    labels[index], int(index), **dict(zip(keys, extra))
                )
            }
            for sample_id, index, *extra in chunk
        }

    write_raw(dataset, map(batch, chunked(pairs)))


def relabel_shared_names(samples, fields: list) -> dict:
    """Makes unique the labels that earlier versions wrote as a shared name.

    Earlier versions labelled classes with the toolkit's names, two of which
    two classes share (``crane``: 134 the bird and 517 the machine). A label
    that is such a name *and* the name of its own ``class_index`` becomes
    that class's unique label (``crane (bird)``); the class index is the
    truth. One query finds them; only those samples are written.

    Args:
        samples: a dataset or view; only its samples are changed
        fields: ``fo.Classification`` fields; those without a declared
            ``class_index`` are skipped

    Returns:
        ``{field: number of labels rewritten}`` for the fields that changed
    """
    table = class_table()
    shared = sorted(table.shared_names)
    fields = [f for f in fields if samples.has_field(f"{f}.class_index")]
    if not fields or not shared:
        return {}

    pipeline = [
        {"$match": {"$or": [{f"{f}.label": {"$in": shared}} for f in fields]}},
        {
            "$project": {
                f"{f}.{key}": 1 for f in fields for key in ("label", "class_index")
            }
        },
    ]
    updates, counts = {}, {}
    for doc in samples._aggregate(pipeline=pipeline):
        for f in fields:
            value = doc.get(f) or {}
            label, index = value.get("label"), value.get("class_index")
            if (
                label in table.shared_names
                and isinstance(index, int)
                and 0 <= index < len(table.names)
                and table.names[index] == label
            ):
                updates.setdefault(doc["_id"], {})[f"{f}.label"] = table.labels[index]
                counts[f] = counts.get(f, 0) + 1

    items = list(updates.items())
    write_raw(samples._dataset, (dict(chunk) for chunk in chunked(items)))
    return counts


def relabel_shared_names_once(samples, fields: list) -> dict:
    """:func:`relabel_shared_names` of the fields not yet checked on this
    dataset, which are then recorded as checked (in its execution store
    ``imagenetx_migrations``): earlier versions' labels are a migration of
    data from before the first release, and labels this version writes are
    unique, so a field is read for them once, not on every tag.

    Args:
        samples: a dataset, or a view of all its samples (every group
            slice): the record is the whole dataset's
        fields: ``fo.Classification`` fields; those without a declared
            ``class_index`` are skipped

    Returns:
        ``{field: number of labels rewritten}`` for the fields that changed
    """
    dataset = samples._root_dataset
    store = ExecutionStore.create(MIGRATION_STORE, dataset._doc.id)
    checked = store.get(SHARED_NAMES_KEY) or []
    todo = [f for f in fields
            if f not in checked and samples.has_field(f"{f}.class_index")]
    if not todo:
        return {}
    counts = relabel_shared_names(samples, todo)
    store.set(SHARED_NAMES_KEY, sorted({*checked, *todo}))
    return counts
