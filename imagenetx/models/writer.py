"""The one background writer of model runs: results become database
updates and are written in chunks from a thread, so the model never waits
for the database, and an interrupted run keeps every chunk written.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Iterable, Iterator, Optional

from pymongo.errors import ServerSelectionTimeoutError

from imagenetx.errors import ImageNetXError
from imagenetx.store.bulk import write_raw
from imagenetx.store.claims import ClaimLost, FieldClaim

#: samples per database write: an interrupted run loses at most this many
WRITE_EVERY = 512
#: and at most this many seconds of work, on slow devices
WRITE_SECONDS = 10.0

#: tells the writing thread that no more results come
_DONE = object()


def chunks(results: Iterable, updates: Callable[[object], dict]) -> Iterator[dict]:
    """Groups ``{sample id: {path: value}}`` updates of the results into
    chunks of :data:`WRITE_EVERY` samples, or of :data:`WRITE_SECONDS` of
    work, whichever comes first."""
    every, seconds = WRITE_EVERY, WRITE_SECONDS  # read per run: tests lower them
    chunk = {}
    last = time.monotonic()
    for result in results:
        chunk.update(updates(result))
        if len(chunk) >= every or time.monotonic() - last >= seconds:
            yield chunk
            chunk = {}
            last = time.monotonic()
    if chunk:
        yield chunk


class BackgroundWrites:
    """Turns results into updates and writes them in a thread, behind a
    queue of at most ``depth`` results, so the model never waits for the
    database (unless the database falls that far behind).

    A clean exit, or an exception in the caller, writes every result put so
    far; a killed process loses the queued results and the chunk being
    filled (the run resumes from what was written). An error in the thread
    (the database gone, a refused update) stops the writes and is raised in
    the caller at its next :meth:`put` or at the exit, as one
    :class:`WriteFailed` line saying how many samples were written; the
    thread never waits for a signal it cannot get.

    With a ``claim``, each write first checks that the run still holds its
    field, and a result is taken only while the claim's heartbeat has not
    found it lost: a run whose field was taken over stops with the claim's
    one :class:`~imagenetx.store.claims.ClaimLost` line, writing nothing
    more.

    Args:
        dataset: the dataset written
        updates: a result -> ``{sample id: {path: value}}``
        depth: the most results queued
        ready (None): called on each result in the thread before
            ``updates`` (waits for a device's copy to land)
        claim (None): the run's :class:`~imagenetx.store.claims.FieldClaim`
    """

    def __init__(self, dataset, updates: Callable[[object], dict], depth: int,
                 ready: Callable = None, claim: Optional[FieldClaim] = None):
        self.dataset = dataset
        self.updates = updates
        self.ready = ready or (lambda r: r)
        self.claim = claim
        self.queue = queue.Queue(maxsize=depth)
        self.error = None
        #: samples the database has acknowledged
        self.written = 0
        self._done = False  # whether the thread has taken _DONE off the queue
        self.thread = threading.Thread(target=self._write, name="imagenetx-writes",
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def _results(self):
        while True:
            item = self.queue.get()
            if item is _DONE:
                self._done = True
                return
            yield self.ready(item)

    def _count(self, n: int) -> None:
        self.written += n

    def _checked(self, batches: Iterable[dict]) -> Iterator[dict]:
        for batch in batches:
            if self.claim is not None:
                self.claim.check()  # the field is still this run's, just before its write
            yield batch

    def _write(self):
        try:
            write_raw(self.dataset, self._checked(chunks(self._results(), self.updates)),
                      self._count)
        except BaseException as e:  # raised in the caller
            self.error = e
            # unblock a caller waiting on a full queue, up to its _DONE (never
            # past it: a failed last write has taken it already)
            while not self._done and self.queue.get() is not _DONE:
                pass

    def put(self, result) -> None:
        """Queues a result, waiting while the queue is full."""
        self._raise()
        if self.claim is not None:
            self.claim.held()
        self.queue.put(result)

    def _raise(self):
        if self.error is not None:
            error, self.error = self.error, None
            if isinstance(error, ClaimLost):
                raise error  # its own line: no resume to advise
            raise WriteFailed.of(error, self.written) from error

    def __exit__(self, kind, value, tb):
        self.queue.put(_DONE)
        self.thread.join()
        if kind is None:
            self._raise()
        return False


class WriteFailed(ImageNetXError):
    """A run's results could not be written: what failed, how many samples
    were written, and that the same command resumes."""

    @classmethod
    def of(cls, error: BaseException, written: int) -> "WriteFailed":
        text = (str(error).strip().splitlines() or [""])[0][:300]
        timeout = ""
        if isinstance(error, ServerSelectionTimeoutError):
            timeout = (f" within the database client's server-selection timeout "
                       f"({server_selection_timeout():g} s)")
        return cls(
            f"Writing the run's results to the database failed{timeout} "
            f"({type(error).__name__}: {text}); the run stopped after {written:,} samples "
            "were written, which are kept: run the same command again to resume")


def server_selection_timeout() -> float:
    """Seconds the database client waits for a server before an operation
    fails (pymongo's ``serverSelectionTimeoutMS``, FiftyOne's client's)."""
    try:
        import fiftyone.core.odm.database as fod

        return fod.get_db_client().options.server_selection_timeout
    except Exception:  # no client yet
        return 30.0
