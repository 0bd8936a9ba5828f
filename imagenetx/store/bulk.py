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
    recorded, stamp, stamps = set(), None, []
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        for updates in batches:
            if not updates:
                continue
            roots = {p.split(".")[0] for values in updates.values() for p in values}
            if stamp is None or not roots <= recorded:
                recorded |= roots
                stamp = begin_write(dataset, recorded)
                stamps.append(stamp)
            modified = stamp.expression()
            # a pipeline update, so that the stamp can depend on the
            # sample's current one; $literal keeps values as they are
            statements = [
                {"q": {"_id": sample_id}, "u": [{"$set": {
                    **{p: {"$literal": v} for p, v in values.items()},
                    "last_modified_at": modified}}]}
                for sample_id, values in updates.items()
            ]
            if len(pending) == WRITERS:
                future, n = pending.popleft()
                future.result()
                done(n)
            pending.append((pool.submit(_update, coll, statements), len(updates)))
            written += len(updates)
        for future, n in pending:
            future.result()
            done(n)
    for stamp in stamps:
        finish_write(dataset, stamp)
    if written:
        dataset.reload()
    return written


def _update(coll, statements: list):
    """Sends update statements in one command, halved while too large."""
    try:
        reply = coll.database.command(
            {"update": coll.name, "updates": statements, "ordered": False}
        )
    except DocumentTooLarge:
        if len(statements) == 1:
            raise
        half = len(statements) // 2
        _update(coll, statements[:half])
        _update(coll, statements[half:])
        return
    errors = reply.get("writeErrors")
    if errors:
        raise ImageNetXError(
            f"The database refused {len(errors)} sample updates, the first: "
            f"{errors[0].get('errmsg')}"
        )


def chunked(items: list, size: int = WRITE_CHUNK):
    """Yields consecutive slices of ``items`` of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
