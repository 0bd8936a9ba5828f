"""The images that Hub pulls left on disk, one folder per endpoint, repo and
commit (:func:`~imagenetx.benchmarks.imagenet_x.hub_pull.images_folder`):
which datasets still use each, and removing those none uses.

A pull's folder is used by every dataset with a sample whose file is in it
(a pulled dataset, a clone, a pushed copy re-attached with
``--media-from``), and by a pull still running. Removing one also removes
the shards of that commit from huggingface_hub's cache, unless asked not
to: they are what the images were read from.
"""

import os
import re
import shutil
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from imagenetx.benchmarks.imagenet_x.hub_pull import _PARTIAL, _alive, pulls_root
from imagenetx.store.datasets import all_slices

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
        used_by: the datasets with samples in it
        pulling: whether a pull is writing into it now
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

    @property
    def unused(self) -> bool:
        return not self.used_by and not self.pulling

    def to_dict(self) -> dict:
        return {"folder": self.folder, "endpoint": self.endpoint, "repo": self.repo_id,
                "revision": self.revision, "splits": self.splits, "images": self.images,
                "bytes": self.size, "used_by": self.used_by, "pulling": self.pulling}


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


def _datasets_using(folders: List[str]) -> Dict[str, List[str]]:
    """folder -> the datasets with a sample whose file is under it."""
    import fiftyone as fo

    used = {f: [] for f in folders}
    if not folders:
        return used
    for name in fo.list_datasets():
        samples = all_slices(fo.load_dataset(name))
        for folder in folders:
            # a query on the field, not an expression: the anchored regex uses
            # the filepath index instead of reading every sample
            inside = samples.match({"filepath": {"$regex": "^" + re.escape(folder + os.sep)}})
            if len(inside.limit(1)):
                used[folder].append(name)
    return used


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
    used = _datasets_using([p.folder for p in pulls])
    for pull in pulls:
        pull.used_by = used[pull.folder]
    return pulls


def _dirs(folder: str) -> List[str]:
    return sorted(e.name for e in os.scandir(folder) if e.is_dir() and not e.name.startswith("."))


def clear_pulls(keep_shards: bool = False) -> List[CachedPull]:
    """Removes the pulled revisions no dataset uses and no pull is writing
    (and, unless ``keep_shards``, their commit's shards in huggingface_hub's
    cache); returns those removed."""
    removed = []
    for pull in cached_pulls():
        if not pull.unused:
            continue
        shutil.rmtree(pull.folder, ignore_errors=True)
        _prune_empty(os.path.dirname(pull.folder))
        if not keep_shards:
            _delete_hub_revision(pull.repo_id, pull.revision)
        removed.append(pull)
    return removed


def _prune_empty(folder: str) -> None:
    """Removes ``folder`` and its parents up to the pulls root while empty."""
    root = pulls_root()
    while folder.startswith(root + os.sep) and os.path.isdir(folder) and not os.listdir(folder):
        os.rmdir(folder)
        folder = os.path.dirname(folder)


def _delete_hub_revision(repo_id: str, revision: str) -> Optional[int]:
    """Deletes one commit of a dataset repo from huggingface_hub's cache
    (its own ``delete_revisions``); returns the bytes freed, None when it
    holds no such commit."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:
        cache = scan_cache_dir()
    except CacheNotFound:
        return None
    for repo in cache.repos:
        if repo.repo_type == "dataset" and repo.repo_id == repo_id and \
                any(r.commit_hash == revision for r in repo.revisions):
            strategy = cache.delete_revisions(revision)
            strategy.execute()
            return strategy.expected_freed_size
    return None
