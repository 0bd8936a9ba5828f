"""Bulk writes of ImageNet ``fo.Classification`` labels."""

import fiftyone as fo
from bson import ObjectId

from imagenetx.classes.imagenet import class_table
from imagenetx.store.bulk import chunked, write_raw
from imagenetx.store.schema import declare_classification, raw_classification


def write_classifications(
    dataset: fo.Dataset, field: str, ids: list, class_indices, **attributes
) -> None:
    """Writes ``fo.Classification`` labels with ``class_index`` in bulk.

    Args:
        dataset: the dataset
        field: the field to write
        ids: the sample ids
        class_indices: the ImageNet class index of each sample
        **attributes: further attributes, each a list aligned with ``ids``
    """
    names = class_table().names
    declare_classification(dataset, field)
    pairs = list(zip(ids, class_indices, *attributes.values()))
    keys = list(attributes)

    def batch(chunk):
        return {
            ObjectId(sample_id): {
                field: raw_classification(
                    names[index], int(index), **dict(zip(keys, extra))
                )
            }
            for sample_id, index, *extra in chunk
        }

    write_raw(dataset, map(batch, chunked(pairs)))
