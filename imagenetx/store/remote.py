"""Files read from a public web address, cached on disk, with a local
folder that overrides both.

Where a file comes from, in order:

1.  an override folder (an argument, else an environment variable the
    caller names, as ``IMAGENETX_ANNOTATIONS_DIR`` does for the
    annotations): the file must be there, nothing is downloaded;
2.  the cache, ``$IMAGENETX_CACHE_DIR`` (default ``~/.cache/imagenetx``);
3.  the web address, saved into the cache (written to a temporary name and
    renamed, so an interrupted download leaves no partial file).
"""

import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Optional

from imagenetx.errors import ImageNetXError

#: environment variable that relocates the download cache
CACHE_DIR_ENV = "IMAGENETX_CACHE_DIR"

#: seconds to wait for a server before giving up
TIMEOUT_S = 60


def cache_dir() -> Path:
    """The download cache folder (``$IMAGENETX_CACHE_DIR`` or
    ``~/.cache/imagenetx``); not created here."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return Path("~/.cache/imagenetx").expanduser()


def override_dir(folder: Optional[str], env: str) -> Optional[Path]:
    """The override folder: ``folder`` if given, else ``$env``, else None."""
    folder = folder or os.environ.get(env)
    return Path(folder).expanduser() if folder else None


def fetch_file(relpath: str, base_url: str, cache_subdir: str,
               local: Optional[Path] = None, what: str = "file",
               local_env: str = None) -> Path:
    """The local path of ``relpath``: from ``local`` when given, else the
    cache, else downloaded from ``base_url + relpath`` into the cache.

    Args:
        relpath: the file's path below the base (``/``-separated)
        base_url: the address that ``relpath`` is appended to
        cache_subdir: the cache's sub-folder for this source
        local (None): an override folder; the file must be in it
        what ("file"): how error messages name the file
        local_env (None): the environment variable that names the override
            folder, for error messages

    Raises:
        ImageNetXError: if the file is not in ``local``, or the download
            fails (no network, not found)
    """
    if local is not None:
        path = local / relpath
        if not path.is_file():
            raise ImageNetXError(
                f"{what} '{path}' is missing from the local folder '{local}':"
                " put the file there, or unset the folder to download it")
        return path
    path = cache_dir() / cache_subdir / relpath
    if path.is_file():
        return path
    url = base_url.rstrip("/") + "/" + relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            data = response.read()
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise ImageNetXError(
            f"Cannot download {what} from {url}: {e}. Check your network, or "
            + (f"set {local_env} to a local copy" if local_env else
               "use a local copy") + f" ({CACHE_DIR_ENV} moves the cache)"
        ) from e
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return path
