"""Bulk writes of ImageNet ``fo.Classification`` labels.

Every label the project writes is the class's unique label
(:attr:`imagenetx.classes.imagenet.ClassTable.labels`): FiftyOne's
evaluation compares label strings, so a name that two classes share would
count their confusions as correct.
"""

from typing import Sequence

import fiftyone as fo
from bson import ObjectId

from imagenetx.classes.imagenet import class_table
from imagenetx.store.bulk import chunked, write_raw
from imagenetx.store.schema import declare_classification, raw_classification


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
