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
"""

import logging
import os
import socket
import threading
import uuid
from datetime import datetime
from typing import Optional

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
    """Holds (dataset, field) for one run, as a context manager.

    Args:
        dataset: the ``fo.Dataset`` the run writes
        field: the field it writes
        what: the run in words, as a refused run names it
            (``"predict timm:resnet18"``)

    Attributes:
        took_over: the line saying whose stale claim this run took over
            (None: the field was free)

    Raises:
        ImageNetXError: on entering, when another live run holds the field
    """

    def __init__(self, dataset, field: str, what: str):
        self.dataset_name = dataset.name
        self.field = field
        self.key = f"{dataset._doc.id}:{field}"
        self.what = what
        self.token = uuid.uuid4().hex
        self.took_over: Optional[str] = None
        self._stop = threading.Event()
        self._beat: Optional[threading.Thread] = None

    def __enter__(self) -> "FieldClaim":
        self._acquire()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True,
                                      name=f"imagenetx-claim-{self.field}")
        self._beat.start()
        return self

    def __exit__(self, kind, value, tb) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        try:
            _collection().delete_one({"_id": self.key, "token": self.token})
        except Exception:
            if kind is None:
                raise
            # the run already failed (a database gone): its error is the one
            # said; the claim goes stale after its lease
            logger.debug("releasing the claim of a failed run failed", exc_info=True)

    def _acquire(self) -> None:
        claims = _collection()
        for _ in range(3):  # the holder may end, or another run take over, meanwhile
            now = _server_now()
            mine = {"_id": self.key, "dataset": self.dataset_name, "field": self.field,
                    "what": self.what, "pid": os.getpid(), "host": socket.gethostname(),
                    "pid_started": _process_started(os.getpid()),
                    "token": self.token, "started": now, "heartbeat": now}
            try:
                claims.insert_one(mine)
                return
            except DuplicateKeyError:
                pass
            held = claims.find_one({"_id": self.key})
            if held is None:
                continue  # released meanwhile
            why = stale_reason(held, now)
            if why is None:
                raise ImageNetXError(
                    f"Field '{self.field}' of dataset '{self.dataset_name}' is being written "
                    f"by another run: {describe_holder(held, now)}; wait for it to end, "
                    "or choose another field")
            # replaced only if still the stale holder's: of two runs taking
            # over together, one does
            if claims.replace_one({"_id": self.key, "token": held["token"]},
                                  mine).modified_count:
                self.took_over = (
                    f"Took over field '{self.field}' of dataset '{self.dataset_name}' "
                    f"from a run that ended without releasing it ({why}): "
                    f"{describe_holder(held)}")
                logger.warning(self.took_over)
                return
        raise ImageNetXError(
            f"Field '{self.field}' of dataset '{self.dataset_name}' is being claimed by "
            "other runs at this moment: try again when they have started")

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                _collection().update_one({"_id": self.key, "token": self.token},
                                         {"$currentDate": {"heartbeat": True}})
            except Exception:  # a database that is briefly away: the next beat
                logger.debug("claim heartbeat failed", exc_info=True)


def claim_field(dataset, field: str, what: str, ranks=None) -> FieldClaim:
    """A :class:`FieldClaim` of ``field`` for a run; use it as
    ``with claim_field(...) as claim:`` around everything the run writes.

    In a sharded run (``ranks``, :class:`~imagenetx.models.distributed.Ranks`)
    rank 0 claims for all: every rank then agrees on whether it got the field,
    so a refusal stops them all."""
    return _RanksClaim(dataset, field, what, ranks) if ranks is not None and \
        ranks.sharded else FieldClaim(dataset, field, what)


class _RanksClaim(FieldClaim):
    """Rank 0 holds the claim; the others learn its outcome."""

    def __init__(self, dataset, field, what, ranks):
        super().__init__(dataset, field, what)
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
        refusal, self.took_over = self.ranks.agree((refusal, self.took_over))
        if refusal:
            raise ImageNetXError(refusal)
        return self

    def __exit__(self, *exc):
        if self.ranks.main:
            super().__exit__(*exc)
