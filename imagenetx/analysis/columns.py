"""Read the columns of a view in one query, and keep them until they change.

The App panel computes again on every view change, control change and
refresh; most of that time is the database read. The last few views' columns
are kept, each with the view's sample ids and the dataset's version when read
(its sample count and newest ``last_modified_at``, both answered from indexes
in about a millisecond):

-   unchanged version: no query (a path not read before is read alone);
-   changed version: only what changed is read again. The samples stamped
    since the last read (``last_modified_at``, an index) are looked up:
    those whose stamp a recorded bulk write explains
    (:mod:`imagenetx.store.changes`: a model's predictions, their
    correctness) changed only that write's fields, whose columns are read
    again whole; any other stamped sample (a re-tag, an edit in the App, a
    new sample) is read again whole; the view's ids are read each time, so
    deleted samples and samples that left or joined the view are exact
    (unless nothing but recorded writes changed, the sample count is the
    same and the view's stages name none of their fields nor
    ``last_modified_at``: then a view of a dataset whose own columns are
    kept takes the changed columns from them, one read for the dataset and
    all its views). A newest stamp that went backwards (a client whose
    clock runs behind rewrote the newest samples) reads the view again
    whole.
    Columns of a field deleted or made again since (the dataset's schema,
    one small read each time) are dropped. Where more than a quarter of the
    samples would be read again, or on grouped and generated datasets, the
    view is read again whole.

A column that did not change stays the same list object, so computations
kept by :func:`derived` on it stay valid.

Like ``last_modified_at`` itself, this cannot see a write that stamps
nothing (FiftyOne's ``clear_sample_field``, a raw database update), nor a
write stamped behind the newest stamp that leaves the newest stamp and the
sample count as they were (a client whose clock runs behind, writing some
samples but not the newest).
"""

import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Dict, Hashable, List, Optional, Sequence

import numpy as np
from bson import ObjectId
from fiftyone import ViewField as F
from fiftyone.core.expressions import ViewExpression
import fiftyone.core.odm as foo
import fiftyone.core.utils as fou

from pymongo.errors import DocumentTooLarge, OperationFailure

from imagenetx.memory import gc_paused
from imagenetx.store.changes import changed_fields, done_stamps, newest_stamp


#: how many views' columns :func:`read_columns` keeps
CACHE_SIZE = 4
#: above this share of samples to read again, a view is read again whole
PATCH_SHARE = 0.25
#: how many results :func:`derived` keeps
DERIVED_SIZE = 512
#: the stamp every write changes: a view whose stages name it ("modified
#: since", "the 50 latest") may hold other samples after any write
STAMP = "last_modified_at"


@dataclass
class _Entry:
    """One view's kept columns."""

    version: tuple
    newest: object  # the newest last_modified_at when read
    ids: List[str]  # the view's sample ids, in its order
    columns: Dict[str, list]
    schema: Dict[str, object]  # root field -> its created_at when read
    seen: frozenset = frozenset()  # recorded writes done before the read


_CACHE: "OrderedDict[tuple, _Entry]" = OrderedDict()
_DERIVED: "OrderedDict[tuple, tuple]" = OrderedDict()
_LOCK = threading.RLock()


def dataset_version(dataset) -> tuple:
    """``(sample count, newest last_modified_at)`` of a dataset, both
    answered from indexes; on a grouped dataset over all its group slices
    (a write to any slice counts), which FiftyOne's ``count()`` on it would
    not see."""
    if dataset.media_type != "group":
        count = dataset.count()
    else:
        count = dataset._sample_collection.estimated_document_count()
    return count, str(newest_stamp(dataset))


def _stages(view) -> str:
    # a stage's serialized form carries a fresh uuid: compare what it does
    # a dataset serializes as its document; as a view, as its (no) stages
    return json.dumps([[s["_cls"], s["kwargs"]] for s in view.view()._serialize()],
                      sort_keys=True, default=str)


def _schema(dataset) -> Dict[str, object]:
    """Each sample field's ``created_at``, read from the database (another
    process may have deleted or made a field again)."""
    doc = foo.get_db_conn().datasets.find_one(
        {"_id": dataset._root_dataset._doc.id},
        {"sample_fields.name": 1, "sample_fields.created_at": 1})
    return {f["name"]: f.get("created_at") for f in (doc or {}).get("sample_fields", [])}


def _root(path: str) -> str:
    return path.split(".")[0]


def read_columns(view, paths: Sequence[str], ids: bool = False,
                 cache: bool = True) -> Dict[str, list]:
    """Reads sample field paths of a view with one ``values()`` query.

    Args:
        view: the view
        paths: the field paths (duplicates are read once)
        ids (False): also return the sample ids under ``"id"``
        cache (True): keep the columns, and read again only what changed
            (see the module docstring)

    Returns:
        ``{path: list}``, one value per sample (None where missing); stored
        vectors (logits) come back as numpy arrays. Treat the lists as
        read-only: they may be shared with the cache.
    """
    paths = list(dict.fromkeys(paths))
    if not cache:
        sample_ids, out = _read(view, paths)
        if ids:
            out["id"] = sample_ids
        return out
    with _LOCK:
        entry = _current(view, paths)
        out = {p: entry.columns[p] for p in paths}
        if ids:
            out["id"] = entry.ids
        return out


def _current(view, paths: List[str]) -> _Entry:
    """The kept entry of ``view``, brought up to date and holding
    ``paths``."""
    dataset = view._dataset
    key = (dataset.name, _stages(view))
    version = dataset_version(dataset)
    schema = _schema(dataset)
    seen = frozenset(done_stamps(dataset, _newest_of(version)))
    entry = _CACHE.get(key)
    patchable = dataset.media_type != "group" and not view._is_generated
    if entry is not None and patchable:
        if entry.version != version:
            entry = _update(view, entry, version, schema)
        else:
            entry = _drop_remade(entry, schema)
    elif entry is not None and entry.version != version:
        entry = None
    if entry is not None:
        missing = [p for p in paths if p not in entry.columns]
        if missing:
            entry = _add(view, entry, missing)
    if entry is None:
        wanted = paths if key not in _CACHE else list(dict.fromkeys(
            [*_CACHE[key].columns, *paths]))
        sample_ids, columns = _read(view, wanted)
        entry = _Entry(version, None, sample_ids, columns, schema)
    if entry.version == version and entry.newest is None:
        entry.newest, entry.seen = _newest_of(version), seen
    _CACHE[key] = entry
    _CACHE.move_to_end(key)
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return entry


def _newest_of(version: tuple):
    """The newest stamp of a version, as the database compares it."""
    from datetime import datetime

    text = version[1]
    if text in ("None", ""):
        return None
    return datetime.fromisoformat(text)


def _drop_remade(entry: _Entry, schema: Dict[str, object]) -> _Entry:
    """Drops the columns of fields deleted or made again since read."""
    stale = [p for p in entry.columns
             if _root(p) not in schema or schema[_root(p)] != entry.schema.get(_root(p))]
    for p in stale:
        del entry.columns[p]
    entry.schema = schema
    return entry


def _add(view, entry: _Entry, paths: List[str]) -> Optional[_Entry]:
    """Reads ``paths`` alone into ``entry`` (None where the view's samples
    are no longer those kept)."""
    sample_ids, columns = _read(view, paths)
    if sample_ids != entry.ids:
        return None
    entry.columns.update(columns)
    return entry


def _update(view, entry: _Entry, version: tuple, schema: Dict[str, object]) -> Optional[_Entry]:
    """``entry`` after the dataset changed: reads again the columns of the
    recorded writes' fields and the samples anything else changed (see the
    module docstring); None where the view is better read again whole."""
    newest = _newest_of(version)
    if entry.newest is None or newest is None or newest < entry.newest:
        return None  # stamped behind (a client whose clock runs late): anything changed
    dataset = view._dataset
    coll = dataset._sample_collection
    stamps = coll.distinct("last_modified_at", {"last_modified_at": {"$gte": entry.newest}})
    explained = changed_fields(dataset, entry.newest, stamps, entry.seen)
    unknown = [s for s in stamps if s not in explained]
    changed = set().union(*explained.values()) if explained else set()
    entry = _drop_remade(entry, schema)
    again = [p for p in entry.columns if _root(p) in changed]
    keep = [p for p in entry.columns if p not in again]
    touched = set()
    if len(unknown) > PATCH_SHARE * max(len(entry.ids), 1):
        return None  # samples saved one by one: many stamps
    if unknown:
        query = {"last_modified_at": {"$in": unknown}}
        if coll.count_documents(query) > PATCH_SHARE * max(len(entry.ids), 1):
            return None
        touched = {str(d["_id"]) for d in coll.find(query, {"_id": 1})}
    # the view's ids (and the recorded fields' columns) in one query: deleted
    # samples and samples that left or joined the view come out exact
    # no sample added, deleted or changed outside the recorded writes, whose
    # fields the view's stages do not name: the view holds the same samples
    stages = _stages(view)
    same_samples = (not unknown and version[0] == entry.version[0]
                    and not any(_names(stages, root) for root in [*changed, STAMP]))
    sample_ids, whole = _read_again(view, again, version, entry.ids if same_samples else None)
    same_rows = sample_ids == entry.ids
    if same_rows:
        position = None
        fetch = [i for i in sample_ids if i in touched] if touched else []
    else:
        position = {i: k for k, i in enumerate(entry.ids)}
        fetch = [i for i in sample_ids if i in touched or i not in position]
    if len(fetch) > PATCH_SHARE * max(len(sample_ids), 1):
        return None
    columns = dict(whole)
    if not fetch and same_rows:
        columns.update({p: entry.columns[p] for p in keep})  # the same lists
    elif keep:
        if position is None:
            position = {i: k for k, i in enumerate(entry.ids)}
        fetched_ids, fetched = _read(view, keep, {"_id": {"$in": [ObjectId(i) for i in fetch]}})
        row = {i: k for k, i in enumerate(fetched_ids)}
        if same_rows:
            # a few samples changed: a column whose values they did not
            # change stays the same list (a re-tag changes only the tags)
            where = [(position[i], row[i]) for i in fetch if i in row]
            for p in keep:
                old, new = entry.columns[p], fetched[p]
                if all(_same(old[k], new[r]) for k, r in where):
                    columns[p] = old
                    continue
                column = list(old)
                for k, r in where:
                    column[k] = new[r]
                columns[p] = column
        else:
            for p in keep:
                old, new = entry.columns[p], fetched[p]
                columns[p] = [new[row[i]] if i in row else old[position[i]]
                              for i in sample_ids]
    return _Entry(version, None, sample_ids, columns, schema)


def _names(stages: str, field: str) -> bool:
    """Whether serialized stages may refer to ``field`` (the name as a word
    of its own, e.g. ``"$field.label"`` or ``"field"``; a false yes only
    costs a read)."""
    return re.search(rf"(?<![\w.]){re.escape(field)}(?!\w)", stages) is not None


def _read_again(view, paths: List[str], version: tuple,
                same_ids: Optional[List[str]] = None) -> tuple:
    """``(the view's sample ids, {path: list})``, as :func:`_read` gives
    them. Where the view holds the same samples as before (``same_ids``)
    and the dataset's own columns are kept, they are taken from the
    dataset's, brought up to date: a recorded write is read once for the
    dataset and every view of it, not once each."""
    dataset = view._dataset
    root_key = (dataset.name, _stages(dataset))
    if (same_ids is None or not paths or root_key not in _CACHE
            or (dataset.name, _stages(view)) == root_key):
        return _read(view, paths)
    root = _current(dataset, paths)
    position = {i: k for k, i in enumerate(root.ids)}
    rows = [position.get(i) for i in same_ids]
    if root.version != version or None in rows:
        return _read(view, paths)
    return same_ids, {p: [root.columns[p][k] for k in rows] for p in paths}


def _same(a, b) -> bool:
    """Whether two stored values are equal (vectors compared as arrays)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    return a == b


def derived(name: str, inputs: Sequence, compute: Callable[[], object],
            extra: Hashable = ()):
    """``compute()``, kept for as long as ``inputs`` (columns returned by
    :func:`read_columns`, or results of other derived computations) are the
    same objects: a column that did not change is the same list, so what
    was computed from unchanged columns is not computed again.

    Args:
        name: what is computed
        inputs: the objects it is computed from (kept alive with the result,
            so their ids are not reused meanwhile)
        compute: computes it
        extra (()): further hashable settings it depends on
    """
    key = (name, tuple(id(x) for x in inputs), extra)
    with _LOCK:
        hit = _DERIVED.get(key)
        if hit is not None:
            _DERIVED.move_to_end(key)
            return hit[1]
    result = compute()
    with _LOCK:
        _DERIVED[key] = (tuple(inputs), result)
        while len(_DERIVED) > DERIVED_SIZE:
            _DERIVED.popitem(last=False)
    return result


def _rows_in_one_document(view, fields: List[str], match: Optional[dict] = None):
    """Every sample's values as one array each, pushed by the database into
    a single result document: one decode in C instead of a cursor step per
    sample (about a third faster on 50,000 samples). None when the document
    would pass MongoDB's 16 MB limit."""
    # ids as strings: hashed and compared in C, and what callers want
    pipeline = view._pipeline() + ([{"$match": match}] if match else []) + [
        {"$project": {"_id": 0, "r": [{"$toString": "$_id"} if f == "_id" else "$" + f
                                      for f in fields]}},
        {"$group": {"_id": None, "rows": {"$push": "$r"}}},
    ]
    try:
        docs = list(view._dataset._sample_collection.aggregate(
            pipeline, allowDiskUse=True))
    except (OperationFailure, DocumentTooLarge):
        return None
    return docs[0]["rows"] if docs else []


def _read(view, paths: List[str], match: Optional[dict] = None) -> tuple:
    """``(sample ids as strings, {path: list})`` of the view (narrowed by
    a ``$match`` on its output where given)."""
    fields = paths + ["_id"]
    # Decoding creates ~10 objects per sample, which would trigger full
    # garbage collections over everything FiftyOne has loaded: they are
    # paused meanwhile.
    with gc_paused():
        rows = _rows_in_one_document(view, fields, match)
        if rows is None:
            # one array per sample decodes about twice as fast as one key
            # per field
            narrowed = view.mongo([{"$match": match}]) if match else view
            rows = narrowed.values(ViewExpression(
                [F(f).to_string() if f == "_id" else F(f) for f in fields]), _raw=True)
        n = len(rows)
        columns = list(zip(*rows)) if n else [()] * len(fields)
        del rows
    out = {p: list(c) for p, c in zip(paths, columns)}
    for p, column in out.items():
        first = next((v for v in column if v is not None), None)
        if isinstance(first, bytes):
            out[p] = [None if v is None else fou.deserialize_numpy_array(v)
                      for v in column]
    return list(columns[-1]), out


def float_column(values: List) -> np.ndarray:
    """Floats with None -> NaN."""
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
