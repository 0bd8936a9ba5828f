"""Files on disk in the project's terms: a full disk as one line, files
written whole, and file names the file system can hold.

A write that finds no space (``ENOSPC``, or ``EDQUOT``: a quota reached)
is the one-line :class:`~imagenetx.errors.ImageNetXError` of
:func:`disk_full`, naming the folder, what was being written and the space
needed as far as the writer knows it, with the space free there. The
writers that know the folder and sizes raise it themselves; the command
line and the App's operators turn any other full disk into it
(:func:`user_error_of`).
"""

import errno
import functools
import hashlib
import os
import shutil
import uuid
from typing import Optional, Union

from imagenetx.errors import ImageNetXError, database_gone

#: the errors of a write that found no space: a full disk, a quota reached
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)

#: the longest file name, in bytes, where the file system does not say
NAME_MAX = 255

#: what to do about a full disk, where the writer has no better advice
ADVICE = "free some space there, or write to a folder on a larger disk"

#: the characters of a shortened name's hash (64 bits of SHA-256)
_HASH_CHARS = 16


def format_size(n: float) -> str:
    """``n`` bytes in words (``12.3 MB``)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            break
        n /= 1024
    return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"


def no_space(e: Optional[BaseException]) -> Optional[OSError]:
    """The ``OSError`` of a full disk that ``e`` is, or was raised from
    (a library may wrap it); None where there is none."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, OSError) and e.errno in NO_SPACE:
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def free_bytes(folder: str) -> Optional[int]:
    """The bytes free on the file system of ``folder`` (or of its nearest
    existing parent); None where that cannot be read."""
    path = os.path.abspath(folder)
    while True:
        try:
            return shutil.disk_usage(path).free
        except OSError:
            parent = os.path.dirname(path)
            if parent == path:
                return None
            path = parent


def disk_full(e: OSError, folder: Optional[str] = None, writing: str = "",
              needed: Optional[int] = None, needs: str = "",
              advice: str = ADVICE) -> ImageNetXError:
    """The one-line error of a write that found no space.

    Args:
        e: the ``OSError`` (``ENOSPC`` or ``EDQUOT``)
        folder (None): the folder written to (default: the failed file's)
        writing (""): what was being written, e.g. ``"n01440764_1.JPEG (2.1 MB)"``
        needed (None): the bytes the whole job needs, as far as known
        needs (""): what those bytes are, e.g. ``"its 3 val shards"``
        advice: what to do

    Returns:
        an :class:`ImageNetXError` to raise (``from None``)
    """
    if folder is None and isinstance(e.filename, (str, bytes)):
        folder = os.path.dirname(os.path.abspath(os.fsdecode(e.filename)))
    free = free_bytes(folder) if folder else None
    parts = [f"{format_size(needed)} needed" + (f" ({needs})" if needs else "")
             if needed is not None else "",
             f"{format_size(free)} free there" if free is not None else ""]
    space = ", ".join(p for p in parts if p)
    return ImageNetXError(
        f"No space left {f'in {folder}' if folder else 'on the disk written to'} "
        f"({e.strerror or os.strerror(e.errno)})"
        + (f" writing {writing}" if writing else "")
        + (f": {space}" if space else "") + f"; {advice}")


def check_room(folder: str, needed: int, writing: str, advice: str = ADVICE) -> None:
    """Raises :func:`disk_full`'s error before writing ``needed`` bytes to
    ``folder`` where its file system has fewer free."""
    free = free_bytes(folder)
    if free is not None and free < needed:
        raise disk_full(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), folder, writing,
                        needed, advice=advice)


def user_error_of(e: BaseException) -> Optional[ImageNetXError]:
    """``e`` as the one line an adapter shows: itself for an
    :class:`ImageNetXError`, :func:`disk_full`'s error for a full disk met
    anywhere (naming the failed file's folder), the database's line when it
    stopped answering (:func:`~imagenetx.errors.database_gone`); None for
    anything else."""
    if isinstance(e, ImageNetXError):
        return e
    full = no_space(e)
    if full is not None:
        return disk_full(full)
    return database_gone(e)


def write_file(path: str, data: Union[str, bytes], advice: str = ADVICE) -> str:
    """Writes ``data`` to ``path`` whole: through a temporary file beside it
    (removed on failure), so ``path`` holds the old file or the new one,
    never a part. Returns ``path``.

    Raises:
        ImageNetXError: for a full disk (:func:`disk_full`)
    """
    body = data.encode("utf-8") if isinstance(data, str) else data
    tmp = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(body)
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        if no_space(e) is None:
            raise
        folder = os.path.dirname(os.path.abspath(path))
        raise disk_full(e, folder, f"{os.path.basename(path)} ({format_size(len(body))})",
                        advice=advice) from None
    return path


@functools.lru_cache(maxsize=256)
def name_max(folder: str) -> int:
    """The longest file name, in bytes, that the file system of ``folder``
    (or of its nearest existing parent) holds: ``PC_NAME_MAX`` where the
    system says, else :data:`NAME_MAX`."""
    path = os.path.abspath(folder)
    while hasattr(os, "pathconf"):
        try:
            return min(os.pathconf(path, "PC_NAME_MAX"), NAME_MAX)
        except (OSError, ValueError):
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    return NAME_MAX


def fitting_name(name: str, limit: int = NAME_MAX) -> str:
    """``name`` where it fits in ``limit`` bytes (:func:`name_max`); else
    its beginning, ``-`` and a hash of the whole name, and its extension,
    in ``limit`` bytes: the same name always gives the same short one, so
    a resumed job finds the file again."""
    if len(name) * 4 <= limit or len(os.fsencode(name)) <= limit:
        return name
    stem, ext = os.path.splitext(name)
    if len(os.fsencode(ext)) > limit // 4:  # no extension, but a long dot part
        stem, ext = name, ""
    tail = "-" + hashlib.sha256(os.fsencode(name)).hexdigest()[:_HASH_CHARS] + ext
    room = limit - len(os.fsencode(tail))
    head, used = [], 0
    for char in stem:
        size = len(os.fsencode(char))
        if used + size > room:
            break
        head.append(char)
        used += size
    return "".join(head) + tail
