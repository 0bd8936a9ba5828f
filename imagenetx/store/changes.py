"""Which fields a bulk write changed, for readers that keep columns.

FiftyOne stamps each sample it writes with ``last_modified_at``, which says
*that* a sample changed, not *which* field. A reader that keeps the columns
of 50,000 samples (the App panel) would have to read every column again
after any write, even one that only added a model's prediction field.

A write of this project's bulk writers says which fields it wrote:

-   :func:`begin_write` picks one stamp for the whole write (an even
    millisecond after every stamp the dataset holds) and records
    ``{stamp, fields, base}`` in the dataset's execution store
    ``imagenetx_writes``, one key per write, before the first sample is
    written;
-   the write sets ``last_modified_at`` as :meth:`WriteStamp.expression`
    says and marks its record done once every sample is written
    (:func:`finish_write`):
    the clean stamp where the sample was last changed no later than
    ``base`` (the dataset's newest stamp when the write began) or by an
    earlier recorded write of the same chain, else the odd millisecond
    after it, which no record names: a sample someone else changed while
    the write ran is then read again whole. The bulk writer
    (:func:`imagenetx.store.bulk.write_raw`) looks up the samples that
    :meth:`WriteStamp.changed_query` selects when it takes the stamp and
    gives only those the expression; the others get the clean stamp, or
    keep a later stamp that a write after the lookup gave them.

A reader that read the dataset when its newest stamp was ``t0``
(:func:`changed_fields`) may then treat a sample carrying a recorded stamp
as changed only in that record's fields, provided the record's ``base`` is
not after ``t0``; any other stamp at or after ``t0`` means "anything may
have changed". Consecutive recorded writes (the predictions, then their
correctness) chain: a write that starts while the dataset's newest stamp
is the previous record's keeps that record's ``base``, and a sample with
its stamp may hold the changes of every write of the chain since the
reader's read.

What this cannot see, like ``last_modified_at`` itself: a write that
stamps nothing, and a write stamped in the same millisecond as a
record's stamp (or, after the writer's lookup, the one before), or
applied after a later-stamped one.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Dict, Iterable, List, Optional, Set

from bson import ObjectId
from fiftyone.operators.store import ExecutionStore

#: the execution store of the records, per dataset
STORE = "imagenetx_writes"
#: how many records a dataset keeps (the newest)
KEEP = 64
_MS = timedelta(milliseconds=1)
_EPOCH = datetime(1970, 1, 1)


def _ms(when: Optional[datetime]) -> int:
    """Milliseconds since the epoch, as MongoDB stores a date."""
    if when is None:
        return 0
    return (when.replace(tzinfo=None) - _EPOCH) // _MS


def _date(ms: int) -> datetime:
    return _EPOCH + ms * _MS


def newest_stamp(dataset) -> Optional[datetime]:
    """The newest ``last_modified_at`` of a dataset's samples (an index
    lookup; over every group slice of a grouped dataset)."""
    doc = dataset._sample_collection.find_one(
        {}, sort=[("last_modified_at", -1)], projection={"last_modified_at": 1})
    return doc and doc.get("last_modified_at")


@dataclass(frozen=True)
class WriteStamp:
    """The ``last_modified_at`` one recorded write gives its samples.

    Attributes:
        stamp: the clean stamp (an even millisecond)
        base: samples last changed no later than this keep the clean stamp
        trusted: earlier stamps of the same chain, which keep it too
        key: the record's key in the store
    """

    stamp: datetime
    base: datetime
    trusted: tuple = ()
    key: str = ""

    def expression(self) -> dict:
        """The aggregation expression of the new ``last_modified_at``, for a
        pipeline update (``{"$set": {"last_modified_at": ...}}``)."""
        clean = [{"$lte": [{"$ifNull": ["$last_modified_at", _EPOCH]}, self.base]}]
        if self.trusted:
            clean.append({"$in": ["$last_modified_at", list(self.trusted)]})
        return {"$cond": [{"$or": clean}, self.stamp, self.stamp + _MS]}

    def changed_query(self) -> dict:
        """The query of the samples that this expression gives the other
        stamp: changed since ``base`` by a write outside the chain (a range
        of FiftyOne's ``last_modified_at`` index)."""
        return {"last_modified_at": {"$gt": self.base, "$nin": list(self.trusted)}}


def _store(dataset) -> ExecutionStore:
    return ExecutionStore.create(STORE, dataset._root_dataset._doc.id)


def _records(store: ExecutionStore, since_ms: int = 0) -> List[dict]:
    """The records stamped at or after ``since_ms``, oldest first (the key
    starts with the stamp, so only those are fetched)."""
    keys = sorted(k for k in store.list_keys() if int(k.split("-")[0]) >= since_ms)
    return [r for r in (store.get(k) for k in keys) if r]


def begin_write(dataset, fields: Iterable[str]) -> WriteStamp:
    """Records a write of ``fields`` (root field names) about to start and
    returns its stamp (see the module docstring)."""
    dataset = dataset._root_dataset
    fields = sorted({f.split(".")[0] for f in fields})
    newest = _ms(newest_stamp(dataset))
    store = _store(dataset)
    keys = sorted(store.list_keys())
    last = store.get(keys[-1]) if keys else None
    if last and last["stamp"] == newest:
        # nothing else was stamped since the previous recorded write: chain
        base, trusted = last["base"], [*last["trusted"], last["stamp"]]
    else:
        base, trusted = newest, []
    now = _ms(datetime.now(timezone.utc))
    stamp = max(now, newest + 1)
    stamp += stamp % 2  # even: the dirty stamp (odd) is never a record's
    key = f"{stamp:015d}-{ObjectId()}"
    record = {"stamp": stamp, "base": base, "trusted": trusted[-KEEP:],
              "fields": fields, "done": False}
    store.set(key, record)
    for old in keys[:-KEEP]:
        store.delete(old)
    return WriteStamp(_date(stamp), _date(base), tuple(_date(t) for t in trusted[-KEEP:]),
                      key)


def finish_write(dataset, stamp: WriteStamp) -> None:
    """Marks a recorded write as applied to every sample: a reader that
    saw it done read all of its samples."""
    store = _store(dataset._root_dataset)
    record = store.get(stamp.key)
    if record:
        store.set(stamp.key, {**record, "done": True})


def done_stamps(dataset, since: Optional[datetime]) -> Set[int]:
    """The stamps (ms) at or after ``since`` of the recorded writes already
    applied to every sample."""
    return {r["stamp"] for r in _records(_store(dataset), _ms(since)) if r.get("done")}


def changed_fields(dataset, since: Optional[datetime], stamps: Iterable[datetime],
                   seen: Iterable[int] = ()) -> Dict[datetime, Set[str]]:
    """Which of ``stamps`` (``last_modified_at`` values at or after
    ``since``) recorded writes explain, and the root fields each may have
    changed since ``since``; a stamp left out may have changed anything.
    ``seen``: the :func:`done_stamps` of ``since`` before the reader read
    (their writes' changes were read)."""
    since_ms = _ms(since)
    wanted = {_ms(s): s for s in stamps}
    records = _records(_store(dataset), since_ms)
    own: Dict[int, Set[str]] = {}
    for record in records:
        own.setdefault(record["stamp"], set()).update(record["fields"])
    out: Dict[datetime, Set[str]] = {}
    for record in records:
        stamp = wanted.get(record["stamp"])
        if stamp is None or record["base"] > since_ms:
            continue
        # a sample with this stamp may also hold the changes of the chain's
        # earlier writes since the read (those before it were read)
        seen = set(seen)
        earlier = [t for t in record["trusted"] if t >= since_ms and t not in seen]
        if any(t not in own for t in earlier):
            continue  # a record of the chain is gone: unexplained
        fields = out.setdefault(stamp, set())
        if record["stamp"] not in seen:
            fields |= own[record["stamp"]]
        for t in earlier:
            fields |= own[t]
    return out
