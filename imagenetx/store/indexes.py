"""Database indexes on what the panels and views query.

The panels and the mistakes views filter on a benchmark's slicing fields
(``imagenetx.top_factor``, ``nuisance``, ...), on tags, on prediction labels
and on correctness (``eval_<field>``). FiftyOne's advice for large datasets
is an index on each such field (``create_index``); FiftyOne drops an index
with its field (``delete_sample_field``).
"""

import logging
from typing import Dict, Iterable, List

from pymongo import IndexModel
from pymongo.errors import OperationFailure

from imagenetx.store.schema import eval_key_of

logger = logging.getLogger(__name__)

#: MongoDB keeps at most 64 indexes per collection; a few are left for the user
MAX_INDEXES = 56

#: the indexes FiftyOne makes on every dataset (a grouped one adds its group's)
FIFTYONE_INDEXES = ("id", "filepath", "created_at", "last_modified_at")


def prediction_index_paths(field: str, eval_key: str = None) -> List[str]:
    """What is queried of a prediction field: its label and its correctness
    (``eval_key``, by default ``eval_<field>``)."""
    return [f"{field}.label", eval_key or eval_key_of(field)]


def ensure_indexes(dataset, paths: Iterable[str]) -> List[str]:
    """Creates an index on each of ``paths`` that exists and has none.

    The missing indexes are built by one ``createIndexes`` command, which
    reads the samples once for all of them; one that exists is left as it
    is (one listing of the indexes, no other query when none is missing).

    Returns:
        the paths indexed now
    """
    dataset = dataset._root_dataset
    existing = set(dataset.list_indexes())
    missing = [p for p in dict.fromkeys(paths)
               if p not in existing and dataset.has_field(p)]
    room = max(0, MAX_INDEXES - len(existing))
    if len(missing) > room:
        logger.info("Dataset '%s' has %d indexes: %s get none (MongoDB keeps 64)",
                    dataset.name, len(existing) + room,
                    ", ".join(f"'{p}'" for p in missing[room:]))
        missing = missing[:room]
    if not missing:
        return []
    try:
        dataset._sample_collection.create_indexes(
            [IndexModel([(dataset._handle_id_fields(p)[0], 1)]) for p in missing])
        return missing
    except OperationFailure:  # one by one, as many as the database takes
        pass
    created = []
    for path in missing:
        try:
            dataset.create_index(path)
        except OperationFailure as e:  # an index only speeds queries up: never fail a run
            logger.info("No index on '%s' of dataset '%s': %s", path, dataset.name, e)
            break
        created.append(path)
    return created


def added_indexes(dataset) -> List[str]:
    """The indexes of a dataset beyond those FiftyOne makes on every one."""
    dataset = dataset._root_dataset
    own = set(FIFTYONE_INDEXES)
    if dataset.media_type == "group":
        own |= {f"{dataset.group_field}.id", f"{dataset.group_field}.name"}
    return [name for name in dataset.list_indexes() if name not in own]


def indexes_by_dataset() -> Dict[str, List[str]]:
    """``{dataset name: its added indexes}`` of every dataset that has any,
    read from the database's index listings (no dataset is loaded)."""
    import fiftyone.core.odm as foo  # lazy: start-up (doctor imports this module early)

    conn = foo.get_db_conn()
    out = {}
    for doc in conn.datasets.find({}, {"name": 1, "sample_collection_name": 1,
                                       "group_field": 1}):
        own = {"_id", *FIFTYONE_INDEXES}
        if doc.get("group_field"):
            own |= {f"{doc['group_field']}._id", f"{doc['group_field']}.name"}
        info = conn[doc["sample_collection_name"]].index_information()
        added = [", ".join(k for k, _ in spec["key"]) for spec in info.values()]
        added = [name for name in added if name not in own]
        if added:
            out[doc["name"]] = added
    return out
