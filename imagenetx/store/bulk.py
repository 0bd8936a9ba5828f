"""Bulk writes of many samples' fields, overlapped with building them."""

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Optional

from pymongo.errors import DocumentTooLarge

from imagenetx.errors import ImageNetXError
from imagenetx.store.changes import begin_write, finish_write

#: samples per update command; small enough to overlap building and writing
WRITE_CHUNK = 8192

#: update commands in flight at once: the database applies them in parallel
WRITERS = 2


def write_raw(dataset, batches: Iterable[dict],
              on_written: Optional[Callable[[int], None]] = None) -> int:
    """Writes batches of ``{sample _id: {field path: stored value}}``.

    Writer threads send batches while the caller's generator builds the
    next, so the database and Python work at the same time, and the
    database applies two batches at once. Each sample gets one
    update that carries all its changed fields, sent as a plain ``update``
    command: ``set_values()`` sends one update per sample *per field* and
    serializes every value through mongoengine, and pymongo's
    ``bulk_write()`` spends more Python time per ``UpdateOne`` than the
    database takes to apply it.

    Each update selects its sample by ``_id`` alone and uses plain update
    operators (``$set`` of the values, ``$max`` of ``last_modified_at``),
    which the database applies in about 60% of the time it takes for an
    update pipeline or for a filter on more than ``_id``. The samples that
    someone else changed since the write's base (one query on the
    ``last_modified_at`` index when the write takes its stamp, normally
    empty) and any sample whose plain update the database refuses (a path
    below a null, a key that starts with ``$``) are written with an update
    pipeline that picks their stamp from their current one
    (:meth:`~imagenetx.store.changes.WriteStamp.expression`); ``$max``
    keeps the later stamp of a sample changed after that query.

    The values must already be in FiftyOne's stored form (what
    ``Document.to_mongo()`` returns) and their fields declared on the
    dataset beforehand, which leaves the dataset exactly as
    ``set_values()`` would. In-memory samples are reloaded at the end.
    The write is recorded with the fields it wrote, and its samples'
    ``last_modified_at`` say so (:mod:`imagenetx.store.changes`), so that
    the panel reads only those columns again.

    Args:
        dataset: a :class:`fiftyone.core.dataset.Dataset`
        batches: an iterable of dicts mapping sample ``ObjectId`` to a dict
            of field paths and stored values

        on_written (None): called with the number of samples of each
            batch once the database has acknowledged it

    Returns:
        the number of samples written
    """
    coll = dataset._sample_collection
    done = on_written or (lambda n: None)
    written = 0
    pending = deque()
    recorded, stamp, stamps, dirty = set(), None, [], set()
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        for updates in batches:
            if not updates:
                continue
            roots = {p.split(".")[0] for values in updates.values() for p in values}
            if stamp is None or not roots <= recorded:
                recorded |= roots
                stamp = begin_write(dataset, recorded)
                stamps.append(stamp)
                # before this stamp is written: who else wrote since its base
                dirty = _changed_since(coll, stamp)
            items = list(updates.items())
            statements = [
                _pipeline(sample_id, values, stamp) if sample_id in dirty
                else _plain(sample_id, values, stamp)
                for sample_id, values in items
            ]

            def fallback(i, items=items, stamp=stamp):
                return _pipeline(*items[i], stamp)

            if len(pending) == WRITERS:
                future, n = pending.popleft()
                future.result()
                done(n)
            pending.append((pool.submit(_update, coll, statements, fallback),
                            len(updates)))
            written += len(updates)
        for future, n in pending:
            future.result()
            done(n)
    for stamp in stamps:
        finish_write(dataset, stamp)
    if written:
        dataset.reload()
    return written


def _plain(sample_id, values: dict, stamp) -> dict:
    """A sample's update by ``_id`` with plain operators: the values as
    they are, ``last_modified_at`` the write's stamp unless it is later."""
    update = {"$max": {"last_modified_at": stamp.stamp}}
    if values:
        update["$set"] = values
    return {"q": {"_id": sample_id}, "u": update}


def _pipeline(sample_id, values: dict, stamp) -> dict:
    """A sample's update as a pipeline, so that its stamp depends on its
    current one; ``$literal`` keeps the values as they are."""
    return {"q": {"_id": sample_id}, "u": [{"$set": {
        **{p: {"$literal": v} for p, v in values.items()},
        "last_modified_at": stamp.expression()}}]}


def _changed_since(coll, stamp) -> set:
    """The samples that a write outside the stamp's chain stamped since its
    base (a range of the ``last_modified_at`` index: normally none)."""
    return {doc["_id"] for doc in coll.find(stamp.changed_query(), {"_id": 1})}


def _update(coll, statements: list, fallback: Callable[[int], dict] = None):
    """Sends update statements in one command, halved while too large;
    those the database refuses are sent again as ``fallback(i)`` of their
    position."""
    errors = _send(coll, statements)
    if errors and fallback is not None:
        errors = _send(coll, [fallback(e["index"]) for e in errors])
    if errors:
        raise ImageNetXError(
            f"The database refused {len(errors)} sample updates, the first: "
            f"{errors[0].get('errmsg')}"
        )


def _send(coll, statements: list, offset: int = 0) -> list:
    """Sends update statements in one command, halved while too large.

    Returns:
        the write errors, each with its statement's ``index`` in
        ``statements`` (plus ``offset``)
    """
    try:
        reply = coll.database.command(
            {"update": coll.name, "updates": statements, "ordered": False}
        )
    except DocumentTooLarge:
        if len(statements) == 1:
            raise
        half = len(statements) // 2
        return (_send(coll, statements[:half], offset)
                + _send(coll, statements[half:], offset + half))
    return [{**e, "index": e.get("index", 0) + offset}
            for e in reply.get("writeErrors") or ()]


def chunked(items: list, size: int = WRITE_CHUNK):
    """Yields consecutive slices of ``items`` of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
