"""Pull datasets and files from the Hugging Face Hub, with clear errors.

FiftyOne-format repos go through FiftyOne's own
``fiftyone.utils.huggingface.load_from_hub``; plain repos through
``huggingface_hub``. The token defaults to the ``HF_TOKEN`` environment
variable.
"""

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import fiftyone as fo

from imagenetx import disk
from imagenetx.errors import ImageNetXError
from imagenetx.store import media
from imagenetx.store.datasets import all_slices, check_new_dataset_name

#: the file that marks a FiftyOne-format repo (``push_to_hub`` writes it)
CONFIG_FILES = ("fiftyone.yml", "fiftyone.yaml")

#: what to do about a full disk in huggingface_hub's cache, and in the
#: folder of FiftyOne's Hub downloads
CACHE_ADVICE = ("free some space there, or set HF_HOME to a folder on a larger disk "
                "(huggingface_hub's cache)")
DOWNLOADS_ADVICE = ("free some space there, or set FIFTYONE_DEFAULT_DATASET_DIR to a folder "
                    "on a larger disk")


def check_repo_id(repo_id: str) -> None:
    """Raises ImageNetXError unless ``repo_id`` has the form ``ORG/NAME``
    and passes huggingface_hub's own local check (``validate_repo_id``:
    letters, digits, ``-``, ``_``, ``.``), before any network call."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    if not repo_id or repo_id.count("/") != 1 or "" in repo_id.split("/"):
        raise ImageNetXError(
            f"'{repo_id}' is not a Hugging Face Hub repo id: use the form "
            "ORG/NAME, as in https://huggingface.co/datasets/ORG/NAME"
        )
    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        raise ImageNetXError(
            f"'{repo_id}' is not a Hugging Face Hub repo id "
            f"({str(e).strip().splitlines()[0].rstrip('.')}): use ORG/NAME with letters, "
            "digits, '-', '_' and '.' only"
        ) from None


def repo_url(repo_id: str) -> str:
    """The page of a dataset repo on the Hub (or on ``HF_ENDPOINT``)."""
    from huggingface_hub import constants

    return f"{constants.ENDPOINT}/datasets/{repo_id}"


@dataclass(frozen=True)
class RepoSnapshot:
    """One revision of a dataset repo, as the Hub names it at the start of a
    pull: every later download asks for this commit, so a repo that changes
    upstream meanwhile cannot mix two revisions into one pull.

    Attributes:
        repo_id: ``ORG/NAME``
        revision: the commit sha
        endpoint: the Hub's address (``HF_ENDPOINT``)
        files: path -> ``(size, oid)``; the oid is the file's ETag (git
            blob id, or sha256 for LFS files)
    """

    repo_id: str
    revision: str
    endpoint: str
    files: Dict[str, Tuple[Optional[int], Optional[str]]] = field(repr=False)

    @property
    def paths(self) -> List[str]:
        return sorted(self.files)


def repo_snapshot(repo_id: str, revision: Optional[str] = None,
                  token: Optional[str] = None) -> RepoSnapshot:
    """Resolves a dataset repo's revision (a branch, tag or commit; default
    its main branch) to its commit, with every file's size and oid, in one
    request (huggingface_hub's ``dataset_info``).

    Raises:
        ImageNetXError: for a bad repo id, a revision it does not have, or
            any Hub error
    """
    from huggingface_hub import HfApi, constants

    check_repo_id(repo_id)
    try:
        info = HfApi().dataset_info(repo_id, revision=revision, files_metadata=True,
                                    token=_token(token))
    except Exception as e:
        raise _hub_error(repo_id, e, token, revision=revision) from e
    files = {s.rfilename: (s.lfs.size if s.lfs else s.size,
                           s.lfs.sha256 if s.lfs else s.blob_id)
             for s in info.siblings or ()}
    return RepoSnapshot(repo_id, info.sha, constants.ENDPOINT, files)


def _status(e: Exception) -> Optional[int]:
    response = getattr(e, "response", None)
    return getattr(response, "status_code", None)


def _hub_error(repo_id: str, e: Exception, token: Optional[str] = None,
               action: str = "load", revision: Optional[str] = None,
               folder: Optional[str] = None, writing: str = "",
               needed: Optional[int] = None,
               advice: str = DOWNLOADS_ADVICE) -> ImageNetXError:
    """The one line of a Hub error; a full disk names ``folder`` (where the
    download was written), ``writing`` and the bytes ``needed``
    (:func:`imagenetx.disk.disk_full`), with ``advice``."""
    from huggingface_hub.errors import (
        GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError)

    full = disk.no_space(e)
    if full is not None:
        return disk.disk_full(full, folder, writing or f"files of '{repo_id}'", needed,
                              advice=advice)
    status = _status(e)
    if isinstance(e, RevisionNotFoundError):
        return ImageNetXError(
            f"'{repo_id}' has no revision '{revision}' (HTTP {status}): pass as `revision` "
            f"a branch, tag or commit of the repo (see {repo_url(repo_id)}/commits/main), "
            "or leave it out for the main branch")
    if isinstance(e, RepositoryNotFoundError) and not isinstance(e, GatedRepoError):
        # the Hub answers 401 for a repo that does not exist when asked without a token
        return ImageNetXError(
            f"'{repo_id}' was not found on the Hugging Face Hub (HTTP {status}): check the "
            f"repo id at {repo_url(repo_id)}; if it is private, set HF_TOKEN to a token "
            "that has access (the plugin secret HF_TOKEN in the App)")
    if isinstance(e, GatedRepoError) or status in (401, 403):
        url = repo_url(repo_id)
        if _token(token):
            return ImageNetXError(
                f"'{repo_id}' refused your token (HTTP {status}): the repo is "
                f"gated or private; accept its terms at {url} with the account "
                "of the token in HF_TOKEN (the plugin secret HF_TOKEN in the "
                "App), or set HF_TOKEN to a token that has access")
        return ImageNetXError(
            f"'{repo_id}' needs a token (HTTP {status}): the repo is gated or "
            f"private; accept its terms at {url}, then set HF_TOKEN to a token "
            "of that account (the plugin secret HF_TOKEN in the App)")
    return ImageNetXError(
        f"Could not {action} '{repo_id}' {'to' if action == 'push' else 'from'} "
        f"the Hugging Face Hub: {e}. "
        "Check the repo id, your network, and HF_TOKEN for private repos"
    )


def _token(token: Optional[str]) -> Optional[str]:
    return token or os.environ.get("HF_TOKEN")


def hub_downloads_root() -> str:
    """The folder of FiftyOne's ``load_from_hub`` downloads, one
    ``ORG/NAME`` folder per repo."""
    return os.path.join(fo.config.default_dataset_dir, "huggingface", "hub")


def hub_download_folder(repo_id: str) -> str:
    """Where FiftyOne's ``load_from_hub`` downloads a repo's files (its split
    and subset folders are inside it)."""
    return os.path.join(hub_downloads_root(), repo_id)


@dataclass
class DroppedMedia:
    """The samples a FiftyOne-format pull dropped because a file they name
    lies outside the repo's download folder."""

    repo_id: str
    folder: str
    samples: int = 0
    paths: List[str] = field(default_factory=list)

    def __bool__(self):
        return self.samples > 0

    def __str__(self):
        if not self:
            return ""
        return (f"{self.samples:,} sample{'s' if self.samples > 1 else ''} dropped: "
                f"'{self.repo_id}' names media outside its download folder {self.folder} "
                f"({media.examples(self.paths)}), which a repo may not name")


@dataclass
class PulledRepo:
    """What a FiftyOne-format pull made: the summary of what was done with
    the samples (tagging, conversion) and the samples dropped for their
    media (:class:`DroppedMedia`). Reads as the summary it wraps."""

    summary: object
    dropped: DroppedMedia

    def __str__(self):
        return str(self.summary) + (f"; {self.dropped}" if self.dropped else "")

    def __getattr__(self, name):
        if name in ("summary", "dropped"):  # not set yet (a copy being made)
            raise AttributeError(name)
        return getattr(self.summary, name)


def confine_media(dataset: fo.Dataset, repo_id: str) -> DroppedMedia:
    """Deletes the samples of a dataset just pulled from ``repo_id`` that
    name a file outside the repo's download folder (an absolute path such
    as ``/etc/passwd``, a ``../`` escape), so no later push uploads it.

    Raises:
        ImageNetXError: when no sample is left (the dataset is deleted)
    """
    folder = hub_download_folder(repo_id)
    found = media.outside(media.sample_media(dataset), [folder])
    dropped = DroppedMedia(repo_id, folder, len({i for i, _ in found}), [p for _, p in found])
    if not dropped:
        return dropped
    dataset.delete_samples(list({i for i, _ in found}))
    if not len(all_slices(dataset)):
        name = dataset.name
        dataset.delete()
        raise ImageNetXError(
            f"'{repo_id}' names no media inside its download folder {dropped.folder} "
            f"(e.g. {media.examples(dropped.paths)}): a repo may name only its own files; "
            f"no dataset '{name}' was made")
    return dropped


def pull_from_hub(
    repo_id: str,
    split: Optional[str] = None,
    max_samples: Optional[int] = None,
    name: Optional[str] = None,
    overwrite: bool = False,
    token: Optional[str] = None,
    revision: Optional[str] = None,
) -> Tuple[fo.Dataset, DroppedMedia]:
    """Loads a FiftyOne-format repo as a persistent dataset, less the
    samples whose media lies outside the repo's download folder
    (:func:`confine_media`).

    Args:
        repo_id: ``ORG/NAME``
        split (None): the split to load, where the repo has several
        max_samples (None): the most samples to load
        name (None): the dataset name (FiftyOne's default: the repo id)
        overwrite (False): whether to replace an existing dataset
        token (None): a Hugging Face token
        revision (None): the commit (branch, tag) to load; default main

    Returns:
        ``(dataset, DroppedMedia)``

    Raises:
        ImageNetXError: for a bad repo id, an existing name, any Hub error,
            or a repo none of whose samples' media is its own
    """
    import fiftyone.utils.huggingface as fouh

    check_repo_id(repo_id)
    if name:
        check_new_dataset_name(name, overwrite)
    folder = hub_download_folder(repo_id)
    try:
        dataset = fouh.load_from_hub(
            repo_id,
            split=split,
            max_samples=max_samples,
            name=name,
            overwrite=overwrite,
            persistent=True,
            token=_token(token),
            revision=revision,
        )
    except ImageNetXError:
        raise
    except Exception as e:  # the Hub's errors are many and unrelated
        raise _hub_error(repo_id, e, token, revision=revision, folder=folder) from e
    return dataset, confine_media(dataset, repo_id)


def repo_files(repo_id: str, token: Optional[str] = None) -> List[str]:
    """The paths of all files of a dataset repo."""
    from huggingface_hub import HfApi

    check_repo_id(repo_id)
    try:
        return HfApi().list_repo_files(
            repo_id, repo_type="dataset", token=_token(token)
        )
    except Exception as e:
        raise _hub_error(repo_id, e, token) from e


def is_fiftyone_repo(files: List[str]) -> bool:
    """Whether a repo's files include FiftyOne's ``fiftyone.yml``."""
    return any(f in CONFIG_FILES for f in files)


def download_files(
    repo_id: str, paths: List[str], token: Optional[str] = None
) -> str:
    """Downloads some files of a dataset repo where ``load_from_hub`` puts
    its downloads; returns the local folder of the repo."""
    from huggingface_hub import snapshot_download

    local_dir = hub_download_folder(repo_id)
    try:
        return snapshot_download(
            repo_id,
            repo_type="dataset",
            allow_patterns=paths,
            local_dir=local_dir,
            token=_token(token),
        )
    except Exception as e:
        raise _hub_error(repo_id, e, token, folder=local_dir) from e


def download_file(repo_id: str, path: str, token: Optional[str] = None,
                  revision: Optional[str] = None, size: Optional[int] = None) -> str:
    """Downloads one file of a dataset repo, at ``revision`` (a commit, from
    :func:`repo_snapshot`; default the main branch), into the
    huggingface_hub cache (kept per commit and ETag; resumed where an
    earlier download stopped; a cached file is not downloaded again);
    returns its local path.

    Raises:
        ImageNetXError: for any Hub error, and for a full disk: at once
            where the cache has fewer bytes free than ``size`` (the file's
            bytes, where known) and the file is not cached yet
    """
    from huggingface_hub import constants, hf_hub_download, try_to_load_from_cache

    cache = constants.HF_HUB_CACHE
    writing = f"'{path}' of '{repo_id}'"
    if size and not isinstance(try_to_load_from_cache(
            repo_id, path, revision=revision, repo_type="dataset"), str):
        disk.check_room(cache, size, writing, CACHE_ADVICE)
    try:
        return hf_hub_download(repo_id, path, repo_type="dataset", revision=revision,
                               token=_token(token))
    except Exception as e:
        raise _hub_error(repo_id, e, token, revision=revision, folder=cache, writing=writing,
                         needed=size, advice=CACHE_ADVICE) from e
