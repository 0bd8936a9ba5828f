"""Pull ImageNet itself from the Hugging Face Hub (parquet or webdataset
shards, see :mod:`imagenetx.store.shards`) into a tagged dataset.

A pull first resolves the repo's revision to its commit
(:func:`imagenetx.store.hub.repo_snapshot`) and downloads that commit's
shards only, through ``huggingface_hub`` (its cache, kept per commit and
ETag; resumed downloads; the ``HF_TOKEN`` token), several at once; they
are read as they arrive, as many at once as the process has CPU cores
(reading and writing is CPU-bound: more readers than cores only contend).

Each image's original bytes are written once, under its ImageNet file
name, to ``<FiftyOne dataset dir>/imagenet/<Hub host>/<ORG>/<NAME>/<commit>/<split>/``
(training images in WordNet id folders): a folder per endpoint, repo and
commit, so a repo that changes upstream is pulled into a new folder and the
files of one revision never stand in for another's, nor change under a
dataset built from them. Every member of a shard is checked as it is read
and staged in the pull's own folder; only once the whole shard has been
read are its images moved into place (``os.replace``, so a file under its
final name is always whole). Then:

-   a shard its library cannot read (truncated, not parquet or tar) refuses
    the pull in one line: nothing of that shard is written and no dataset
    is made (shards finished before it stay, for the next pull)
-   a member that is unusable (bytes that are not an image, no label, no
    file name, or a name that is a folder's: ``..``, ``.``, empty, a dot
    name, a WordNet id) is skipped: the summary counts the skipped members and
    names the first ones with what is wrong (a bad image costs only that
    image); a PNG under a .JPEG name is an image, as in ImageNet's own
    train split, and is kept
-   a file name longer than the file system holds (255 bytes, or its
    ``PC_NAME_MAX``) is stored under its beginning, a hash of the whole
    name and its extension (the same every pull, so a resumed pull finds
    it): the sample keeps it, and the summary says so
-   a full disk (or quota) stops the pull in one line naming the folder,
    the image being written, the bytes of the split's shards and the space
    free there: nothing of the shard being read is left, and no dataset is
    made (as the shard downloads, huggingface_hub's cache likewise)

A finished shard gets a marker named by its path, oid (ETag) and size; an
interrupted pull starts again at the shards without one and writes only the
images that are missing. The dataset is built as ``imagenetx load
imagenet-x --dir`` builds it, with the ground truth from the shards' labels,
each shard's images inserted (sorted by file name) as soon as the shards
before it are done; it appears under its name only once every shard is in,
and its info records the repo, commit and endpoint it came from.
"""

import hashlib
import json
import os
import re
import shutil
import threading
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, List, Optional
from urllib.parse import urlparse

import fiftyone as fo

from imagenetx.benchmarks.imagenet_x.tagging import (
    DEFAULT_GT_FIELD,
    TagSummary,
    warm_annotations,
)
from imagenetx import disk
from imagenetx.disk import fitting_name, name_max
from imagenetx.errors import ImageNetXError
from imagenetx.store import shards as sh
from imagenetx.store.hub import RepoSnapshot
from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.benchmarks.imagenet_x.build import build_imagenet_dataset
from imagenetx.classes.imagenet import class_table
from imagenetx.store.databases import server_identity
from imagenetx.store.datasets import check_new_dataset_name
from imagenetx.store.hub import (
    download_file, hub_download_folder, hub_downloads_root, repo_snapshot)

#: shards downloaded at once (downloads overlap with reading)
DEFAULT_WORKERS = 4
#: skipped members named in a pull's summary
SKIPPED_SHOWN = 3

_MARKERS = ".shards"  # one json per finished shard: entries and skipped members
_PARTIAL = ".partial"  # files being written, one folder per pull
#: what to do about a full disk during a pull
_ADVICE = ("free some space there, or set FIFTYONE_DEFAULT_DATASET_DIR to a folder on a "
           "larger disk; the pull stopped and made no dataset (the shards it finished stay "
           "for the next pull)")


@dataclass
class PullProgress:
    """Where a pull stands: shards and images, with a rate. ``progress``,
    ``complete`` and ``label`` make it usable wherever FiftyOne expects a
    progress bar (``fiftyone.core.utils.report_progress``)."""

    shards_done: int
    shards_total: int
    images: int
    seconds: float
    message: str = ""

    @property
    def progress(self) -> float:
        return self.shards_done / self.shards_total if self.shards_total else 1.0

    @property
    def complete(self) -> bool:
        return self.shards_done >= self.shards_total

    @property
    def elapsed_time(self) -> float:
        return self.seconds

    @property
    def rate(self) -> float:
        return self.images / self.seconds if self.seconds > 0 else 0.0

    @property
    def label(self) -> str:
        return self.message or (
            f"{self.shards_done:,} of {self.shards_total:,} shards, "
            f"{self.images:,} images, {self.rate:,.0f} images/s")


@dataclass
class PullSummary:
    """What :func:`pull_imagenet` found, wrote and built."""

    repo_id: str
    layout: str
    split: str
    revision: str
    shards: int
    shards_resumed: int
    images_written: int
    images_present: int
    seconds: float
    folder: str
    skipped: list
    shortened: list
    tagging: TagSummary = field(repr=False)

    @property
    def annotated(self) -> int:
        return self.tagging.annotated

    def __str__(self):
        return (
            f"'{self.repo_id}' at revision {self.revision[:12]} is "
            f"{sh.LAYOUT_TITLES[self.layout]}: "
            f"{self.shards:,} {self.split} shards ({self.shards_resumed:,} "
            f"finished by an earlier pull), {self.images_written:,} images "
            f"written and {self.images_present:,} already there in {self.folder}"
            f"{skipped_words(self.skipped)}{shortened_words(self.shortened)}, "
            f"{self.seconds:.1f} s; {self.tagging}"
        )


def skipped_words(skipped: list) -> str:
    """``, 2 members skipped (shard x: sample 'k' is not an image; ...)``,
    or ``""`` when none was."""
    if not skipped:
        return ""
    shown = "; ".join(f"{shard}: {where} {problem}"
                      for shard, where, problem in skipped[:SKIPPED_SHOWN])
    more = f"; {len(skipped) - SKIPPED_SHOWN:,} more" if len(skipped) > SKIPPED_SHOWN else ""
    return (f", {len(skipped):,} unusable member{'s' if len(skipped) > 1 else ''} skipped "
            f"({shown}{more})")


def shortened_words(shortened: list) -> str:
    """``, 1 file name longer than the file system holds shortened (...)``,
    or ``""`` when none was: ``shortened`` holds ``(name, stored name)``."""
    if not shortened:
        return ""
    name, short = shortened[0]
    more = f"; {len(shortened) - 1:,} more" if len(shortened) > 1 else ""
    return (f", {len(shortened):,} file name{'s' if len(shortened) > 1 else ''} longer than "
            f"the file system holds shortened to end in a hash of the name ("
            f"{_abridged(name)} ({len(os.fsencode(name)):,} bytes) as {_abridged(short)}{more})")


def _abridged(name: str, keep: int = 24) -> str:
    """A long name as its beginning, ``...`` and its end, quoted."""
    return repr(name if len(name) <= 2 * keep + 3 else f"{name[:keep]}...{name[-keep:]}")


def reader_slots(layout: str = sh.PARQUET) -> int:
    """Shards read at once: one per CPU core this process may run on for
    parquet (pyarrow decodes in C); one for tars, whose headers tarfile
    parses in Python: two such readers only contend for the interpreter
    lock (and with the downloads), which made the webdataset pull 0.8 of
    plain extraction where one reader makes it about 1.0."""
    if layout != sh.PARQUET:
        return 1
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def pulls_root() -> str:
    """The folder that holds every pull's images."""
    return os.path.join(fo.config.default_dataset_dir, "imagenet")


def endpoint_folder(endpoint: str) -> str:
    """A Hub endpoint as a folder name: ``huggingface.co``, ``127.0.0.1_8080``."""
    parts = urlparse(endpoint)
    return re.sub(r"[^A-Za-z0-9._-]", "_", (parts.netloc or endpoint) + parts.path.rstrip("/"))


def images_folder(snapshot: RepoSnapshot, split: str) -> str:
    """Where a pull writes the images of one split of one revision of a
    repo on one endpoint."""
    org, name = snapshot.repo_id.split("/")
    return os.path.join(pulls_root(), endpoint_folder(snapshot.endpoint), org, name,
                        snapshot.revision, split)


def pull_folder(source: dict) -> str:
    """The folder of one pulled revision (all its splits), from what a
    dataset's ``info["imagenetx"]["source"]`` records."""
    org, name = source["hub"].split("/")
    return os.path.join(pulls_root(), endpoint_folder(source["endpoint"]), org, name,
                        source["revision"])


def known_media_roots(dataset, paths: Iterable[str]) -> List[str]:
    """The folders a dataset's media may lie in, as its Hub origin says: the
    pull's folder of ImageNet shards (``info`` ``source``), the download
    folder of a FiftyOne-format repo (``pulled_from``), and the repo folder
    of any path already in one of those places (a copy re-attached with
    ``media_from``, a dataset FiftyOne's own ``load_from_hub`` made).
    Empty for a dataset with no Hub origin (built from the user's files)."""
    info = dataset.info.get("imagenetx") or {}
    roots = []
    if (info.get("source") or {}).get("hub") and info["source"].get("endpoint"):
        roots.append(pull_folder(info["source"]))
    if (info.get("pulled_from") or {}).get("hub"):
        roots.append(hub_download_folder(info["pulled_from"]["hub"]))
    # <pulls root>/<endpoint>/<ORG>/<NAME>/<commit>/..., <hub folder>/<ORG>/<NAME>/...
    for top, depth in ((pulls_root(), 4), (hub_downloads_root(), 2)):
        top = os.path.join(top, "")
        for path in map(os.path.normpath, paths):
            if path.startswith(top):
                parts = path[len(top):].split(os.sep)
                if len(parts) > depth:
                    roots.append(os.path.join(top, *parts[:depth]))
    return list(dict.fromkeys(roots))


def image_path(folder: str, file_name: str) -> str:
    """An image's path in :func:`images_folder`: val images flat, training
    images in their WordNet id folder (as a local ImageNet folder is read);
    a name longer than the file system holds is shortened, the same way
    every time (:func:`imagenetx.disk.fitting_name`)."""
    limit = name_max(folder)
    if file_name.startswith("n") and "_" in file_name:
        return os.path.join(folder, fitting_name(file_name.split("_", 1)[0], limit),
                            fitting_name(file_name, limit))
    return os.path.join(folder, fitting_name(file_name, limit))


class _Writer:
    """Writes one shard's images into the folder, each once and whole.

    ``needed`` and ``needs``: the bytes the whole pull needs, and what they
    are, for the message of a full disk (:meth:`disk_full`)."""

    def __init__(self, folder: str, needed: Optional[int] = None, needs: str = ""):
        self.folder = folder
        self.needed, self.needs = needed, needs
        # this pull's own folder: another pull of the same split may be
        # writing beside it (the App's worker and the command line)
        self.partial = os.path.join(folder, _PARTIAL, f"{os.getpid()}-{uuid.uuid4().hex[:8]}")
        self.markers = os.path.join(folder, _MARKERS)
        self.written = 0
        self.present = 0
        self.lock = threading.Lock()
        self.dirs = set()
        #: folder -> the file names in it, listed once (not a stat per image)
        self.listed: dict = {}
        #: set when the pull stops early: shards being written give up
        self.abort = threading.Event()

    def start(self) -> None:
        root = os.path.dirname(self.partial)
        os.makedirs(root, exist_ok=True)
        for entry in os.listdir(root):  # what killed pulls left behind
            pid = entry.split("-", 1)[0]
            if not (pid.isdigit() and _alive(int(pid))):
                path = os.path.join(root, entry)
                if os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.remove(path)
        os.makedirs(self.partial)
        os.makedirs(self.markers, exist_ok=True)

    def stop(self) -> None:
        shutil.rmtree(self.partial, ignore_errors=True)

    def disk_full(self, e: OSError, writing: str = "") -> ImageNetXError:
        """The one line of a full disk met while writing ``writing``."""
        return disk.disk_full(e, self.folder, writing, self.needed, self.needs, _ADVICE)

    def _in_place(self, path: str) -> bool:
        """Whether an image is already in place: its folder is listed once.
        A file another pull puts there meanwhile is written again, with the
        same bytes (the same revision), and replaced whole."""
        parent, name = os.path.split(path)
        with self.lock:
            names = self.listed.get(parent)
            if names is None:
                try:
                    names = set(os.listdir(parent))
                except FileNotFoundError:
                    names = set()
                self.listed[parent] = names
            return name in names

    def marker(self, shard: str, oid: Optional[str], size: Optional[int]) -> str:
        return os.path.join(self.markers, f"{shard.replace('/', '--')}.{oid or 'none'}."
                                          f"{size if size is not None else 'none'}.json")

    def finished(self, shard: str, oid: Optional[str], size: Optional[int]):
        """``(entries, skipped)`` of a shard an earlier pull of this revision
        wrote, where its images are all still there; else None."""
        try:
            with open(self.marker(shard, oid, size)) as f:
                done = json.load(f)
        except FileNotFoundError:
            return None
        entries = done["entries"]
        if all(os.path.exists(image_path(self.folder, n)) for n, _ in entries):
            return entries, [tuple(x) for x in done["skipped"]]
        return None

    def write_shard(self, members, shard: str, oid: Optional[str], size: Optional[int],
                    count: Callable[[int], None]):
        """Reads a whole shard, staging its new images in this pull's own
        folder, then moves them into place and marks the shard; returns
        ``(entries, skipped)``. A shard that cannot be read is refused with
        nothing of it in place."""
        entries, skipped, staged, seen = [], [], [], set()
        stage = os.path.join(self.partial, f"{threading.get_ident()}-{uuid.uuid4().hex[:8]}")
        writing = ""  # the image being written, for a full disk's message
        try:
            os.makedirs(stage)
            for member in members:
                if self.abort.is_set():
                    raise _Stopped()
                problem = sh.member_problem(member)
                name, label, data, where = member
                if problem is None and name in seen:
                    problem = f"repeats file name {name}"
                if problem is not None:
                    skipped.append((shard, where, problem))
                    continue
                if not 0 <= label < 1000:
                    raise ImageNetXError(
                        f"Shard '{shard}' labels '{name}' {label}, not an ImageNet-1k "
                        "class index (0-999): the repo is not ImageNet-1k")
                path = image_path(self.folder, name)
                if not self._in_place(path):
                    tmp = os.path.join(stage, os.path.basename(path))
                    writing = f"{os.path.basename(path)} ({disk.format_size(len(data))})"
                    with open(tmp, "wb") as f:
                        f.write(data)
                    staged.append((tmp, path))
                elif os.path.isdir(path):  # not "already there"
                    skipped.append((shard, where, f"has file name {name!r}, a folder of "
                                                  "the pull"))
                    continue
                seen.add(name)
                entries.append((name, label))
                count(1)
            # the whole shard was read: its images go into place
            writing = f"the images of shard '{shard}'"
            for tmp, path in staged:
                parent = os.path.dirname(path)
                if parent not in self.dirs:
                    os.makedirs(parent, exist_ok=True)
                    self.dirs.add(parent)
                os.replace(tmp, path)
            writing = f"the marker of shard '{shard}'"
            with self.lock:
                for _, path in staged:
                    parent, name = os.path.split(path)
                    self.listed.setdefault(parent, set()).add(name)
                self.written += len(staged)
                self.present += len(entries) - len(staged)
            self._mark(shard, oid, size, entries, skipped)
        except OSError as e:
            if disk.no_space(e) is None:
                raise
            shutil.rmtree(stage, ignore_errors=True)  # its bytes count as free
            raise self.disk_full(e, writing) from None
        finally:
            shutil.rmtree(stage, ignore_errors=True)
        return entries, skipped

    def _mark(self, shard: str, oid, size, entries: list, skipped: list) -> None:
        marker = self.marker(shard, oid, size)
        tmp = os.path.join(self.partial, os.path.basename(marker))
        with open(tmp, "w") as f:
            json.dump({"entries": entries, "skipped": skipped}, f)
        os.replace(tmp, marker)


def check_pull_limits(max_samples: Optional[int], workers: Optional[int]) -> None:
    """Raises ImageNetXError for ``max_samples`` or ``workers`` below 1."""
    if max_samples is not None and max_samples < 1:
        raise ImageNetXError("`max_samples` must be at least 1")
    if workers is not None and workers < 1:
        raise ImageNetXError(f"`workers` must be at least 1, not {workers}")


class _Stopped(Exception):
    """A shard's writing given up because the pull stopped."""


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return pid < 2 ** 22  # another user's process; a thread id is no pid
    return True


class _Fetch:
    """One split's shards, downloaded and written: :meth:`batches` yields
    each shard's images in shard order as soon as that shard is done, so a
    caller can insert them while later shards download and are read."""

    def __init__(self, snapshot: RepoSnapshot, layout, split, max_samples, token, workers,
                 progress):
        repo_id = snapshot.repo_id
        if split not in ("val", "train"):
            raise ImageNetXError(f"Unknown split '{split}': use `split='val'` or `split='train'`")
        self.shard_files = sh.split_shards(snapshot.paths, layout, split)
        if not self.shard_files:
            raise ImageNetXError(
                f"'{repo_id}' ({sh.LAYOUT_TITLES[layout]}) has no {split} shards: "
                f"use `split='{'train' if split == 'val' else 'val'}'`")
        check_pull_limits(max_samples, workers)
        self.snapshot = snapshot
        self.repo_id, self.layout, self.split, self.token = repo_id, layout, split, token
        self.max_samples = max_samples
        # with max_samples, shards are read in order, one at a time
        self.workers = 1 if max_samples is not None else (workers or DEFAULT_WORKERS)
        self.progress = progress
        self.started = time.perf_counter()
        self.folder = images_folder(snapshot, split)
        sizes = [snapshot.files.get(f, (None, None))[0] for f in self.shard_files]
        self.writer = _Writer(
            self.folder, sum(sizes) if None not in sizes else None,
            f"the {len(sizes):,} {split} shard{'s' if len(sizes) > 1 else ''} of '{repo_id}'")
        self.skipped = []
        #: ``(name, stored name)`` of the names too long for the file system
        self.shortened = []
        self.wnids = {w: i for i, w in enumerate(class_table().wnids)}
        self.counted = 0
        self.count_lock = threading.Lock()
        self.reading = threading.Semaphore(reader_slots(layout))
        self.done = 0
        self.total = len(self.shard_files)
        self.resumed = 0

    def _count(self, n: int) -> None:
        with self.count_lock:
            self.counted += n

    def _report(self, message: str = "") -> None:
        if self.progress is not None:
            self.progress(PullProgress(self.done, self.total, self.counted,
                                       time.perf_counter() - self.started, message))

    def _run(self, shard: str) -> list:
        writer = self.writer
        size, oid = self.snapshot.files.get(shard, (None, None))
        done = writer.finished(shard, oid, size)
        if done is not None:
            self._count(len(done[0]))
            with writer.lock:
                writer.present += len(done[0])
                self.resumed += 1
            return done
        local = download_file(self.repo_id, shard, self.token, self.snapshot.revision, size)
        with self.reading:
            return writer.write_shard(sh.read_shard(local, self.layout, shard, self.wnids),
                                      shard, oid, size, self._count)

    def batches(self) -> Iterator[dict]:
        """Per shard, in shard order: ImageNet file name -> ``(path, class
        index)`` (the first ``max_samples`` images in all)."""
        try:
            self.writer.start()
        except OSError as e:
            if disk.no_space(e) is None:
                raise
            raise self.writer.disk_full(e, "the pull's own folders") from None
        self._report(f"'{self.repo_id}' at revision {self.snapshot.revision[:12]} is "
                     f"{sh.LAYOUT_TITLES[self.layout]}: "
                     f"{len(self.shard_files):,} {self.split} shards")
        results, given, left = {}, 0, self.max_samples
        pool = ThreadPoolExecutor(max_workers=self.workers)
        pending, queue = set(), list(self.shard_files)
        stopped = True
        try:
            while queue or pending:
                while queue and len(pending) < self.workers:
                    future = pool.submit(self._run, queue[0])
                    future.shard = queue.pop(0)
                    pending.add(future)
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    results[future.shard], skipped = future.result()
                    self.skipped += skipped
                self.done += len(finished)
                if self.max_samples is not None and self.counted >= self.max_samples:
                    queue = []
                    self.total = self.done + len(pending)  # the shards it takes
                self._report()
                while given < len(self.shard_files) and self.shard_files[given] in results:
                    entries = results.pop(self.shard_files[given])
                    given += 1
                    if left is not None:
                        entries, left = entries[:left], left - len(entries[:left])
                    batch = {n: (image_path(self.folder, n), label) for n, label in entries}
                    self.shortened += [(n, os.path.basename(p)) for n, (p, _) in batch.items()
                                       if os.path.basename(p) != n]
                    yield batch
            if self.counted == 0:
                raise ImageNetXError(
                    f"'{self.repo_id}' holds no usable {self.split} image in its "
                    f"{self.done:,} shards{skipped_words(self.skipped)}: no dataset was made")
            stopped = False
        finally:
            if stopped:  # an error, an interrupt, or the consumer gave up
                self.writer.abort.set()
            # stopped: the shards being written give up rather than finish
            pool.shutdown(wait=not stopped, cancel_futures=True)
            self.writer.stop()

    @property
    def stats(self) -> tuple:
        """``(revision, shards, shards resumed, images written, images
        present, seconds, folder, skipped members, shortened names)``."""
        return (self.snapshot.revision, self.done, self.resumed, self.writer.written,
                self.writer.present, time.perf_counter() - self.started, self.folder,
                self.skipped, self.shortened)


def fetch_images(
    snapshot: RepoSnapshot,
    layout: str,
    split: str = "val",
    max_samples: Optional[int] = None,
    token: Optional[str] = None,
    workers: Optional[int] = None,
    progress: Optional[Callable[[PullProgress], None]] = None,
):
    """Downloads one split's shards and writes their images once each.

    Args:
        snapshot: the repo's revision and files
            (:func:`imagenetx.store.hub.repo_snapshot`)
        layout: ``"parquet"``, ``"webdataset"`` or ``"archive"``
        split ("val"): ``"val"`` or ``"train"``
        max_samples (None): stop after the shards that hold this many
            images, and keep the first this many (a quick start)
        token (None): a Hugging Face token (default: ``HF_TOKEN``)
        workers (None): shards downloaded at once (default 4; 1 with
            ``max_samples``, which reads shards in order); at most one per
            CPU core is read at a time (one tar: :func:`reader_slots`)
        progress (None): called with a :class:`PullProgress` as shards finish

    Returns:
        ``(images, stats)``: ImageNet file name -> ``(path, class index)``,
        and :attr:`_Fetch.stats`

    Raises:
        ImageNetXError: for a split without shards, a refused token, or a
            shard that does not hold ImageNet
    """
    fetch = _Fetch(snapshot, layout, split, max_samples, token, workers, progress)
    images = {}
    for batch in fetch.batches():
        images.update(batch)
    return images, fetch.stats


def pull_imagenet(
    snapshot: RepoSnapshot,
    layout: str,
    split: str = "val",
    max_samples: Optional[int] = None,
    name: Optional[str] = None,
    overwrite: bool = False,
    gt_field: str = DEFAULT_GT_FIELD,
    token: Optional[str] = None,
    workers: Optional[int] = None,
    progress: Optional[Callable[[PullProgress], None]] = None,
):
    """Pulls one split of an ImageNet repo into a new tagged dataset, as
    ``imagenetx load imagenet-x --dir`` builds it, with the shards' labels:
    each shard's images are inserted as soon as the shards before it are
    done, while the next ones download and are read; the dataset takes its
    name once all are in (a killed pull leaves no dataset, only a
    non-persistent one FiftyOne deletes).

    Args:
        snapshot: the repo's revision and files
            (:func:`imagenetx.store.hub.repo_snapshot`)
        layout: ``"parquet"``, ``"webdataset"`` or ``"archive"``
        split ("val"): ``"val"`` or ``"train"``
        max_samples (None): stop after the shards that hold this many
            images, and keep the first this many (a quick start)
        name (None): the dataset name, ``imagenet-x-{split}`` by default
        overwrite (False): whether to replace an existing dataset
        gt_field ("ground_truth"): the ground truth field
        token (None): a Hugging Face token (default: ``HF_TOKEN``)
        workers (None): shards downloaded at once (default 4; 1 with
            ``max_samples``, which reads shards in order)
        progress (None): called with a :class:`PullProgress` as shards finish

    Returns:
        ``(dataset, PullSummary)``

    Raises:
        ImageNetXError: for a split without shards, a refused token, an
            existing name, or a shard that does not hold ImageNet
    """

    name = name or f"imagenet-x-{split}"
    check_new_dataset_name(name, overwrite)
    if split in ("val", "train"):  # read the annotations while shards download
        warm = threading.Thread(target=warm_annotations, args=(split,), daemon=True)
        warm.start()
    fetch = _Fetch(snapshot, layout, split, max_samples, token, workers, progress)
    dataset, tagging = build_imagenet_dataset(
        name, fetch.batches(), split=split, overwrite=overwrite, gt_field=gt_field)
    info = dict(dataset.info.get("imagenetx") or {})
    info["source"] = source_info(snapshot, split, layout)
    dataset.info["imagenetx"] = info
    dataset.save()
    record_database(os.path.dirname(fetch.folder))
    return dataset, PullSummary(snapshot.repo_id, layout, split, *fetch.stats, tagging)


#: one json per database server whose datasets were given a pull's images
DATABASES = ".databases"


def record_database(folder: str) -> None:
    """Notes in a pulled revision's folder (``<commit>/.databases/``) the
    database server whose dataset now uses its images, so a ``cache
    clear`` run against another server knows it cannot see that use."""
    server = server_identity()
    notes = os.path.join(folder, DATABASES)
    os.makedirs(notes, exist_ok=True)
    path = os.path.join(notes, hashlib.sha1(server["id"].encode()).hexdigest()[:16] + ".json")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(server, f)
        os.replace(tmp, path)


def source_info(snapshot: RepoSnapshot, split: Optional[str], layout: str) -> dict:
    """What a pulled dataset's ``info["imagenetx"]["source"]`` records."""
    return {"hub": snapshot.repo_id, "revision": snapshot.revision,
            "endpoint": snapshot.endpoint, "split": split, "layout": layout}


def media_repo(repo_id: str, token: Optional[str] = None,
               revision: Optional[str] = None) -> tuple:
    """``(snapshot, layout)`` of the ImageNet repo ``media_from`` names.

    Raises:
        ImageNetXError: for a repo that cannot be read (a token it needs,
            an id not found) or that is not an ImageNet repo
    """

    snapshot = repo_snapshot(repo_id, revision, token)
    layout = sh.repo_layout(repo_id, snapshot.paths)
    if layout == sh.FIFTYONE:
        raise ImageNetXError(f"`media_from` needs an ImageNet repo, and '{repo_id}' is "
                             f"{sh.LAYOUT_TITLES[layout]}")
    return snapshot, layout


def reattach_media(dataset, repo_id: str, token: Optional[str] = None,
                   workers: Optional[int] = None, progress=None) -> int:
    """Points the samples of a dataset at the images of an ImageNet repo,
    matched by file name (a pushed copy without its gated images); pulls
    the split(s) its file names need. Returns the samples re-attached.

    Raises:
        ImageNetXError: if no file name of the dataset is an ImageNet one,
            or none is in the repo (nothing is changed)
    """

    paths = dataset.values("filepath")
    names = [os.path.basename(p) for p in paths]
    splits = sorted({anno.split_of(n) for n in names} - {None})
    if not splits:
        raise ImageNetXError(
            f"Dataset '{dataset.name}' has no ImageNet file names "
            f"(ILSVRC2012_val_00000001.JPEG) to match with '{repo_id}'")
    snapshot, layout = media_repo(repo_id, token)
    found = {}
    for split in splits:
        images, _ = fetch_images(snapshot, layout, split, None, token, workers, progress)
        found.update(images)
    record_database(os.path.dirname(images_folder(snapshot, splits[0])))
    matched = sum(n in found for n in names)
    if not matched:  # nothing to re-attach: change nothing
        raise ImageNetXError(
            f"None of the {len(names):,} file names of dataset '{dataset.name}' (e.g. "
            f"{names[0]}) is among the {len(found):,} {'/'.join(splits)} images of "
            f"'{repo_id}' (e.g. {next(iter(found), 'none')}): pass the ImageNet repo the "
            "dataset's images came from")
    new = [found[n][0] if n in found else p for n, p in zip(names, paths)]
    dataset.set_values("filepath", new)
    return matched
