"""The images that Hub pulls left on disk, one folder per endpoint, repo and
commit (:func:`~imagenetx.benchmarks.imagenet_x.hub_pull.images_folder`):
which datasets still use each, and removing those none uses.

A pull's folder is used by every dataset with a sample whose file is in it
(a pulled dataset, a clone, a pushed copy re-attached with
``media_from``) in any database of this install's database server (the
dataset folder is the machine's, the databases are many), and by a pull
still running. A pull whose datasets live on another database server (its
folder notes each server a pull gave images to) cannot be seen from here:
it is kept, and named, unless forced.

Removing a pull also removes, unless asked not to, the shard files that
pull read from huggingface_hub's cache, and nothing else there: other files
of the same commit (another tool's downloads) stay, and a file's bytes
(its blob) stay while another revision's file still points at them.
"""

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from typing import List, Set

from imagenetx.benchmarks.imagenet_x.hub_pull import (
    _MARKERS, _PARTIAL, DATABASES, _alive, pulls_root)
from imagenetx.store.databases import datasets_using, server_identity

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass
class CachedPull:
    """One pulled revision on disk.

    Attributes:
        folder: ``<pulls root>/<endpoint>/<ORG>/<NAME>/<commit>``
        endpoint: the Hub's address as a folder name
        repo_id: ``ORG/NAME``
        revision: the commit
        splits: the splits pulled
        images: the image files
        size: their bytes
        used_by: the datasets with samples in it (``name (database DB)``
            for another database of this server)
        pulling: whether a pull is writing into it now
        unseen: why its use cannot be known from here (another database
            server its images were given to, a database that cannot be read)
    """

    folder: str
    endpoint: str
    repo_id: str
    revision: str
    splits: List[str]
    images: int
    size: int
    used_by: List[str] = field(default_factory=list)
    pulling: bool = False
    unseen: List[str] = field(default_factory=list)

    @property
    def unused(self) -> bool:
        """No dataset uses it, as far as can be known, and no pull writes it."""
        return not self.used_by and not self.pulling and not self.unseen

    def to_dict(self) -> dict:
        return {"folder": self.folder, "endpoint": self.endpoint, "repo": self.repo_id,
                "revision": self.revision, "splits": self.splits, "images": self.images,
                "bytes": self.size, "used_by": self.used_by, "pulling": self.pulling,
                "unseen": self.unseen}


def _files(folder: str) -> tuple:
    """``(image files, bytes)`` under a split folder, less the pull's own
    dot folders."""
    count = size = 0
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            count += 1
            size += os.path.getsize(os.path.join(root, name))
    return count, size


def _pulling(split_folder: str) -> bool:
    partial = os.path.join(split_folder, _PARTIAL)
    try:
        entries = os.listdir(partial)
    except FileNotFoundError:
        return False
    return any(e.split("-", 1)[0].isdigit() and _alive(int(e.split("-", 1)[0]))
               for e in entries)


def _other_servers(folder: str, this: str) -> List[str]:
    """The database servers other than ``this`` (an identity) that a pull
    noted giving its images to. A note that cannot be read may name another
    server, so it counts as one."""
    notes = os.path.join(folder, DATABASES)
    labels = []
    for name in sorted(os.listdir(notes)) if os.path.isdir(notes) else ():
        path = os.path.join(notes, name)
        try:
            with open(path) as f:
                server = json.load(f)
            if not isinstance(server, dict) or "id" not in server:
                raise ValueError("no server id")
        except (OSError, ValueError) as e:
            labels.append(f"a database server its unreadable note {path} may name ({e})")
            continue
        if server.get("id") != this:
            labels.append(f"a dataset on another database server, {server.get('label')}")
    return labels


def cached_pulls() -> List[CachedPull]:
    """Every pulled revision on disk, with the datasets that use it."""
    root = pulls_root()
    pulls = []
    for endpoint in sorted(os.listdir(root)) if os.path.isdir(root) else ():
        for org in _dirs(os.path.join(root, endpoint)):
            for name in _dirs(os.path.join(root, endpoint, org)):
                for commit in _dirs(os.path.join(root, endpoint, org, name)):
                    if not _COMMIT.match(commit):
                        continue
                    folder = os.path.join(root, endpoint, org, name, commit)
                    splits = _dirs(folder)
                    counts = [_files(os.path.join(folder, s)) for s in splits]
                    pulls.append(CachedPull(
                        folder, endpoint, f"{org}/{name}", commit, splits,
                        sum(c for c, _ in counts), sum(b for _, b in counts),
                        pulling=any(_pulling(os.path.join(folder, s)) for s in splits)))
    use = datasets_using([p.folder for p in pulls], within=root)
    this = server_identity()["id"] if pulls else None
    for pull in pulls:
        pull.used_by = use.used[pull.folder]
        pull.unseen = _other_servers(pull.folder, this) + use.unreadable
    return pulls


def _dirs(folder: str) -> List[str]:
    return sorted(e.name for e in os.scandir(folder) if e.is_dir() and not e.name.startswith("."))


@dataclass
class Cleared:
    """What :func:`clear_pulls` did.

    Attributes:
        removed: the pulls removed
        kept_unseen: unused pulls kept because their use cannot be known
            from here (:attr:`CachedPull.unseen`)
        shards_freed: bytes freed in huggingface_hub's cache
    """

    removed: List[CachedPull]
    kept_unseen: List[CachedPull]
    shards_freed: int = 0


def clear_pulls(keep_shards: bool = False, force: bool = False) -> Cleared:
    """Removes the pulled revisions no dataset uses and no pull is writing
    (and, unless ``keep_shards``, the shard files each read from
    huggingface_hub's cache: :func:`delete_pull_shards`). A pull whose use
    cannot be known from here is kept unless ``force``."""
    done = Cleared([], [])
    for pull in cached_pulls():
        if pull.used_by or pull.pulling:
            continue
        if pull.unseen and not force:
            done.kept_unseen.append(pull)
            continue
        shards = _pulled_shards(pull.folder)
        shutil.rmtree(pull.folder, ignore_errors=True)
        _prune_empty(os.path.dirname(pull.folder))
        if not keep_shards:
            done.shards_freed += delete_pull_shards(pull.repo_id, pull.revision, shards)
        done.removed.append(pull)
    return done


def _pulled_shards(folder: str) -> Set[str]:
    """The shards a pulled revision's folder holds images of, as its markers
    name them (``data--validation-00000-of-00014.parquet``: the shard's path
    in the repo with ``/`` as ``--``)."""
    shards = set()
    for split in _dirs(folder):
        markers = os.path.join(folder, split, _MARKERS)
        for name in os.listdir(markers) if os.path.isdir(markers) else ():
            if name.endswith(".json"):
                shards.add(name[: -len(".json")].rsplit(".", 2)[0])
    return shards


def _prune_empty(folder: str) -> None:
    """Removes ``folder`` and its parents up to the pulls root while empty."""
    root = pulls_root()
    while folder.startswith(root + os.sep) and os.path.isdir(folder) and not os.listdir(folder):
        os.rmdir(folder)
        folder = os.path.dirname(folder)


def delete_pull_shards(repo_id: str, revision: str, shards: Set[str]) -> int:
    """Deletes from huggingface_hub's cache the files of one commit of a
    dataset repo that a pull read (``shards``, as :func:`_pulled_shards`
    names them), and their blobs where no other file of the repo's cache
    points at them; the commit's other files stay. A commit left with no
    file goes through huggingface_hub's own ``delete_revisions``. Returns
    the bytes freed."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:
        cache = scan_cache_dir()
    except CacheNotFound:
        return 0
    repo = next((r for r in cache.repos if r.repo_type == "dataset" and r.repo_id == repo_id),
                None)
    commit = next((r for r in repo.revisions if r.commit_hash == revision), None) \
        if repo else None
    if commit is None:
        return 0

    def ours(f) -> bool:
        rel = os.path.relpath(f.file_path, commit.snapshot_path)
        return rel.replace(os.sep, "--") in shards

    mine = [f for f in commit.files if ours(f)]
    if not mine:
        return 0
    if len(mine) == len(commit.files):  # nothing else of the commit: the whole revision
        strategy = cache.delete_revisions(revision)
        strategy.execute()
        return strategy.expected_freed_size
    kept_blobs = {f.blob_path for r in repo.revisions for f in r.files if f not in mine}
    freed = 0
    for f in mine:
        f.file_path.unlink(missing_ok=True)
        if f.blob_path not in kept_blobs:
            f.blob_path.unlink(missing_ok=True)
            freed += f.size_on_disk
        _prune_up_to(f.file_path.parent, str(commit.snapshot_path))
    return freed


def _prune_up_to(folder, top: str) -> None:
    """Removes ``folder`` and its parents below ``top`` while empty."""
    folder = str(folder)
    while folder.startswith(top + os.sep) and os.path.isdir(folder) and not os.listdir(folder):
        os.rmdir(folder)
        folder = os.path.dirname(folder)
