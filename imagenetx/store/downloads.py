"""Public files the project reads at run time: a local-folder override, then
a cache, then the download.

Each source (the cue-conflict stimuli, Gavrikov & Keuper's tables, ...) is
a :class:`RemoteFiles`: a base URL, the environment variable naming a local
folder with the same layout (the override: nothing is downloaded then), and
a cache subfolder. The cache lives under ``$IMAGENETX_CACHE_DIR`` (default
``~/.cache/imagenetx``). Downloads go to a temporary name first, so an
interrupted run never leaves half a file in the cache.
"""

import os
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

from imagenetx.disk import disk_full, no_space
from imagenetx.errors import ImageNetXError

#: the environment variable that relocates the download cache
CACHE_ENV = "IMAGENETX_CACHE_DIR"
#: parallel downloads of many small files
DOWNLOAD_THREADS = 8
TIMEOUT_S = 60


def cache_root() -> Path:
    """The download cache: ``$IMAGENETX_CACHE_DIR`` or ``~/.cache/imagenetx``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "imagenetx")


@dataclass(frozen=True)
class RemoteFiles:
    """Files under one public base URL, with an override folder and a cache.

    Attributes:
        name: what the files are, for messages (``"cue-conflict stimuli"``)
        base_url: the URL the relative paths are appended to
        override_env: the environment variable naming a local folder with
            the same layout, read instead of downloading
        cache_subdir: the folder under :func:`cache_root`
        option: the library parameter that also points at a local folder,
            named in errors as the parameter (``"folder"``)
    """

    name: str
    base_url: str
    override_env: str
    cache_subdir: str
    option: str = "folder"

    def local_dir(self, override: Optional[str] = None) -> Optional[Path]:
        """The override folder (argument, else environment), if any.

        Raises:
            ImageNetXError: when the named folder does not exist
        """
        folder = override or os.environ.get(self.override_env)
        if not folder:
            return None
        path = Path(folder).expanduser()
        if not path.is_dir():
            source = "" if override else f" (from ${self.override_env})"
            raise ImageNetXError(
                f"The {self.name} folder '{folder}'{source} does not exist: "
                f"point `{self.option}` or ${self.override_env} at a folder "
                f"laid out like {self.base_url}")
        return path

    def cache_dir(self) -> Path:
        return cache_root() / self.cache_subdir

    def paths(self, relpaths: Sequence[str], override: Optional[str] = None,
              progress=None) -> List[Path]:
        """Local paths of ``relpaths``: from the override folder when one is
        set (nothing downloaded), else from the cache, downloading the
        missing ones with a progress bar.

        Raises:
            ImageNetXError: for a file missing from the override folder, or
                a failed download (naming the URL and the override)
        """
        local = self.local_dir(override)
        if local is not None:
            out = [local / r for r in relpaths]
            missing = [str(r) for r, p in zip(relpaths, out) if not p.is_file()]
            if missing:
                raise ImageNetXError(
                    f"{len(missing):,} {self.name} files are missing from "
                    f"'{local}', e.g. {', '.join(missing[:3])}: it must be laid "
                    f"out like {self.base_url}")
            return out
        cache = self.cache_dir()
        out = [cache / r for r in relpaths]
        todo = [(r, p) for r, p in zip(relpaths, out) if not p.is_file()]
        if todo:
            # lazy: start-up (doctor reads cache_root without FiftyOne, whose
            # import waits for a database that does not answer)
            import fiftyone.core.utils as fou

            with fou.ProgressBar(total=len(todo), progress=progress) as pb:
                with ThreadPoolExecutor(DOWNLOAD_THREADS) as pool:
                    for _ in pool.map(lambda rp: self._download(*rp), todo):
                        pb.update()
        return out

    def path(self, relpath: str, override: Optional[str] = None) -> Path:
        """One file's local path (see :meth:`paths`)."""
        return self.paths([relpath], override, progress=False)[0]

    def _download(self, relpath: str, dest: Path) -> None:
        url = f"{self.base_url.rstrip('/')}/{relpath}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(dest.name + f".part{os.getpid()}")
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT_S) as r, open(part, "wb") as f:
                while chunk := r.read(1 << 20):
                    f.write(chunk)
            os.replace(part, dest)
        except (urllib.error.URLError, OSError) as e:
            part.unlink(missing_ok=True)
            if no_space(e) is not None:
                raise disk_full(no_space(e), str(dest.parent), relpath,
                                advice=f"free some space there, or set ${CACHE_ENV} to a "
                                       "folder on a larger disk") from None
            raise ImageNetXError(
                f"Could not download the {self.name} from {url} ({e}). Without "
                f"network access, download them elsewhere and point "
                f"`{self.option}` (or ${self.override_env}) at that folder") from None
