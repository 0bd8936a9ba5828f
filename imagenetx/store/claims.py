"""One run per field at a time: a claim on (dataset, field) in the database.

A run that writes a field (a prediction, an attack, a probe) first inserts a
document keyed by the dataset's id and the field into the collection
:data:`COLLECTION` of FiftyOne's database. The key is the document's ``_id``,
unique, so of two runs started together exactly one inserts it; the other is
refused with one line naming the run that holds the field. The holder
refreshes the claim's heartbeat while it runs and deletes the claim when it
ends, however it ends.

A run that dies without ending (``kill -9``, a lost machine) leaves its claim
behind. The claim is then stale, and the next run takes it over and says so:
at once when its holder ran on this host and its process is gone (or its
process id now names another process), or, for a holder on another host,
after :data:`LEASE_S` seconds without a heartbeat. A live holder on this host
is never taken over, however long it is stopped. Times are the database
server's, so the clocks of the machines that share it need not agree.

Fencing: a holder on another host that was only paused (SIGSTOP, a suspended
job or VM, a closed laptop) may wake after its claim was taken over. Its
claim documents carry its own ``token``, so it learns it at once: the
heartbeat's update matches nothing, and :meth:`FieldClaim.check` (before
each write of a run, its record and its evaluation) matches nothing. It then
stops with :class:`ClaimLost`, one line naming the run that took the field
and when, having written nothing more. The run that took a field over keeps
the fact in :attr:`FieldClaim.takeovers`, which the run record stores.
"""

import contextlib
import logging
import os
import socket
import threading
import uuid
from datetime import datetime, timedelta
from typing import List, Optional, Sequence, Union

import fiftyone.core.odm as foo
import psutil
from bson.codec_options import CodecOptions
from pymongo.errors import DuplicateKeyError

from imagenetx.errors import ImageNetXError

logger = logging.getLogger(__name__)

#: the collection of FiftyOne's database that holds the claims
COLLECTION = "imagenetx_claims"
#: seconds between a holder's heartbeats
HEARTBEAT_S = 10.0
#: seconds without a heartbeat after which a claim is stale
LEASE_S = 60.0


def _collection():
    # naive UTC dates whatever FiftyOne's timezone setting makes its connection return
    return foo.get_db_conn().get_collection(COLLECTION,
                                            codec_options=CodecOptions(tz_aware=False))


def _server_now() -> datetime:
    """The database server's clock (naive UTC, as pymongo reads dates)."""
    return foo.get_db_conn().command("hello")["localTime"].replace(tzinfo=None)


def _process_started(pid: int) -> Optional[float]:
    """When a process of this host started (None: there is none)."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return None
    except psutil.Error:  # another user's process: alive, start unknown
        return -1.0


def _process_is_gone(held: dict) -> bool:
    started = _process_started(int(held["pid"]))
    if started is None:
        return True
    # the same process id given to another process since
    recorded = held.get("pid_started")
    return recorded is not None and started >= 0 and abs(started - recorded) > 1.0


class ClaimLost(ImageNetXError):
    """A run's field was taken over by another run while this one was
    paused or cut off from the database: it stops, writing nothing more."""


def describe_holder(held: dict, now: Optional[datetime] = None) -> str:
    """A claim's holder in words: what it runs, its process, since when."""
    text = (f"{held.get('what')} (pid {held.get('pid')} on {held.get('host')}, "
            f"since {held['started']:%Y-%m-%d %H:%M:%S} UTC")
    if now is not None and held.get("heartbeat"):
        text += f", last heartbeat {max(0, (now - held['heartbeat']).total_seconds()):.0f} s ago"
    return text + ")"


def stale_reason(held: dict, now: datetime) -> Optional[str]:
    """Why a claim's holder is taken to have died (None: it runs)."""
    if held.get("host") == socket.gethostname():
        return "its process is gone" if _process_is_gone(held) else None
    silent = (now - held["heartbeat"]).total_seconds()
    if silent > LEASE_S:
        return f"no heartbeat for {silent:.0f} s"
    return None


class FieldClaim:
    """Holds (dataset, field) for one run, as a context manager; several
    fields (an embedding and its predictions) are held together, under one
    token and one heartbeat.

    Args:
        dataset: the ``fo.Dataset`` the run writes
        fields: the field it writes, or every field it writes
        what: the run in words, as a refused run names it
            (``"predict timm:resnet18"``)

    Attributes:
        took_over: the line saying whose stale claim this run took over
            (None: the field was free)
        takeovers: each takeover as the run record keeps it: ``{"field",
            "from", "because", "at"}``
        lost: the :class:`ClaimLost` line once the heartbeat found a field
            taken over (None while held)

    Raises:
        ImageNetXError: on entering, when another live run holds a field
    """

    def __init__(self, dataset, fields: Union[str, Sequence[str]], what: str):
        self.dataset_name = dataset.name
        self.fields = [fields] if isinstance(fields, str) else list(fields)
        self.field = self.fields[0]
        self.keys = [f"{dataset._doc.id}:{f}" for f in self.fields]
        self.key = self.keys[0]
        self.what = what
        self.token = uuid.uuid4().hex
        self.took_over: Optional[str] = None
        self.takeovers: List[dict] = []
        self.lost: Optional[str] = None
        self._stop = threading.Event()
        self._beat: Optional[threading.Thread] = None

    def __enter__(self) -> "FieldClaim":
        try:
            for field, key in zip(self.fields, self.keys):
                self._acquire(field, key)
        except BaseException:
            with contextlib.suppress(Exception):  # the refusal is the error said
                self._release()  # the fields already held
            raise
        self._beat = threading.Thread(target=self._heartbeat, daemon=True,
                                      name=f"imagenetx-claim-{self.field}")
        self._beat.start()
        return self

    def __exit__(self, kind, value, tb) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        try:
            self._release()
        except Exception:
            if kind is None:
                raise
            # the run already failed (a database gone): its error is the one
            # said; the claim goes stale after its lease
            logger.debug("releasing the claim of a failed run failed", exc_info=True)

    def _release(self) -> None:
        # a claim taken over is the other run's: only this run's token goes
        _collection().delete_many({"_id": {"$in": self.keys}, "token": self.token})

    def _acquire(self, field: str, key: str) -> None:
        claims = _collection()
        for _ in range(3):  # the holder may end, or another run take over, meanwhile
            now = _server_now()
            mine = {"_id": key, "dataset": self.dataset_name, "field": field,
                    "what": self.what, "pid": os.getpid(), "host": socket.gethostname(),
                    "pid_started": _process_started(os.getpid()),
                    "token": self.token, "started": now, "heartbeat": now}
            try:
                claims.insert_one(mine)
                return
            except DuplicateKeyError:
                pass
            held = claims.find_one({"_id": key})
            if held is None:
                continue  # released meanwhile
            why = stale_reason(held, now)
            if why is None:
                raise ImageNetXError(
                    f"Field '{field}' of dataset '{self.dataset_name}' is being written "
                    f"by another run: {describe_holder(held, now)}; wait for it to end, "
                    "or choose another field")
            # replaced only if still the stale holder's: of two runs taking
            # over together, one does
            if claims.replace_one({"_id": key, "token": held["token"]},
                                  mine).modified_count:
                line = (f"Took over field '{field}' of dataset '{self.dataset_name}' "
                        f"from a run that ended without releasing it ({why}): "
                        f"{describe_holder(held)}")
                self.took_over = line if self.took_over is None else \
                    f"{self.took_over}; {line[0].lower()}{line[1:]}"
                by = f"{self.what} (pid {os.getpid()} on {socket.gethostname()})"
                self.takeovers.append({
                    "field": field, "from": describe_holder(held), "because": why,
                    "by": by, "at": f"{now:%Y-%m-%d %H:%M:%S} UTC"})
                _note_takeover(claims, held["token"], key, by, why, now)
                logger.warning(line)
                return
        raise ImageNetXError(
            f"Field '{field}' of dataset '{self.dataset_name}' is being claimed by "
            "other runs at this moment: try again when they have started")

    def _confirm(self) -> bool:
        """Refreshes the heartbeat of every field; False when one of them is
        no longer this run's (taken over)."""
        done = _collection().update_many({"_id": {"$in": self.keys}, "token": self.token},
                                         {"$currentDate": {"heartbeat": True}})
        return done.matched_count == len(self.keys)

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                if not self._confirm():
                    self._lose()
                    return
            except Exception:  # a database that is briefly away: the next beat
                logger.debug("claim heartbeat failed", exc_info=True)

    def _lose(self) -> str:
        """Notes which field was taken, by whom and when (:attr:`lost`)."""
        if self.lost is None:
            claims = _collection()
            notes = {d["_id"]: d["taken"] for d in claims.find(
                {"_id": {"$in": [_taken_id(self.token, k) for k in self.keys]}})}
            docs = {d["_id"]: d for d in claims.find({"_id": {"$in": self.keys}})}
            field, key = next(((f, k) for f, k in zip(self.fields, self.keys)
                               if _taken_id(self.token, k) in notes
                               or docs.get(k, {}).get("token") != self.token),
                              (self.field, self.key))
            note, taker = notes.get(_taken_id(self.token, key)), docs.get(key)
            if note is not None:
                to = (f"{note['by']} at {note['at']:%Y-%m-%d %H:%M:%S} UTC, which found this "
                      f"run's claim stale ({note['because']}: paused, suspended or cut off "
                      "from the database)")
                claims.delete_many({"_id": {"$in": list(notes)}})  # said: read once
            elif taker is not None:
                to = (f"{taker.get('what')} (pid {taker.get('pid')} on {taker.get('host')}) "
                      f"at {taker['started']:%Y-%m-%d %H:%M:%S} UTC")
            else:
                to = "another run, which has since released it"
            self.lost = (f"Lost field '{field}' of dataset '{self.dataset_name}' to {to}; "
                         "nothing more written")
        return self.lost

    def held(self) -> None:
        """Raises :class:`ClaimLost` once the heartbeat has found a field
        taken over (no database round trip: call it as often as needed)."""
        if self.lost is not None:
            raise ClaimLost(self.lost)

    def check(self) -> None:
        """Raises :class:`ClaimLost` unless this run still holds every
        field, as the database says now (one round trip, which also
        refreshes the heartbeat): before each write."""
        self.held()
        if not self._confirm():
            raise ClaimLost(self._lose())


#: days a takeover's note waits for the run it was taken from to read it
NOTES_KEPT_DAYS = 30


def _taken_id(token: str, key: str) -> str:
    return f"taken:{token}:{key}"


def _note_takeover(claims, token: str, key: str, by: str, why: str, now: datetime) -> None:
    """Leaves, for the run whose claim ``token`` was taken over, who took
    ``key`` and when: it reads the note if it wakes, after the taker ended
    too. Notes no run read in :data:`NOTES_KEPT_DAYS` go."""
    claims.insert_one({"_id": _taken_id(token, key),
                       "taken": {"key": key, "by": by, "because": why, "at": now}})
    claims.delete_many({"taken.at": {"$lt": now - timedelta(days=NOTES_KEPT_DAYS)}})


def claim_field(dataset, fields: Union[str, Sequence[str]], what: str,
                ranks=None) -> FieldClaim:
    """A :class:`FieldClaim` of ``fields`` (one name or several) for a run;
    use it as ``with claim_field(...) as claim:`` around everything the run
    writes, and call ``claim.check()`` before each write.

    In a sharded run (``ranks``, :class:`~imagenetx.models.distributed.Ranks`)
    rank 0 claims for all: every rank then agrees on whether it got the fields,
    so a refusal stops them all, and checks rank 0's claim before its writes."""
    return _RanksClaim(dataset, fields, what, ranks) if ranks is not None and \
        ranks.sharded else FieldClaim(dataset, fields, what)


class _RanksClaim(FieldClaim):
    """Rank 0 holds the claim; the others learn its outcome."""

    def __init__(self, dataset, fields, what, ranks):
        super().__init__(dataset, fields, what)
        self.ranks = ranks

    def __enter__(self):
        refusal = None
        if self.ranks.main:
            try:
                super().__enter__()
            except ImageNetXError as e:
                refusal = str(e)
            except Exception as e:  # every rank must reach agree(), or the others wait
                refusal = f"claiming field '{self.field}' failed: {type(e).__name__}: {e}"
        refusal, self.took_over, self.takeovers, self.token = self.ranks.agree(
            (refusal, self.took_over, self.takeovers, self.token))
        if refusal:
            raise ImageNetXError(refusal)
        return self

    def __exit__(self, *exc):
        if self.ranks.main:
            super().__exit__(*exc)
