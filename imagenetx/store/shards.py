"""ImageNet as the Hugging Face Hub keeps it: repo layouts and shard readers.

Two public copies of ImageNet-1k are gated repos of shards:

-   ``ILSVRC/imagenet-1k``: parquet shards
    ``data/validation-00000-of-00014.parquet``, rows ``image`` {``bytes``,
    ``path``} and ``label``; its older revision kept archives
    ``data/val_images.tar.gz`` of ``ILSVRC2012_val_00000001_n01751748.JPEG``
-   ``timm/imagenet-1k-wds``: webdataset tars
    ``imagenet1k-validation-00.tar``, one sample per ``__key__`` with
    ``jpg``, ``cls`` and ``json`` (``filename``: ``n01630670/ILSVRC2012_val_00009670.JPEG``)

:func:`repo_layout` tells these (and FiftyOne-format repos) apart by their
file names; :func:`read_shard` yields every member of a shard as
``(ImageNet file name, class index, original image bytes, where)``, and
:func:`member_problem` says what makes one unusable (no label, bytes that
are not an image). A shard its library cannot read at all is refused in one
line. Nothing here knows FiftyOne.
"""

import json
import os
import re
import tarfile
from typing import Iterator, List, Optional, Tuple

from imagenetx.errors import ImageNetXError

FIFTYONE = "fiftyone"
PARQUET = "parquet"
WEBDATASET = "webdataset"
ARCHIVE = "archive"

#: what each layout is called in messages
LAYOUT_TITLES = {
    FIFTYONE: "a FiftyOne-format repo (fiftyone.yml, as push_to_hub writes it)",
    PARQUET: "a parquet ImageNet repo (data/validation-00000-of-00014.parquet, "
             "as ILSVRC/imagenet-1k)",
    WEBDATASET: "a webdataset ImageNet repo (imagenet1k-validation-00.tar, "
                "as timm/imagenet-1k-wds)",
    ARCHIVE: "an archive ImageNet repo (data/val_images.tar.gz, the older "
             "revision of ILSVRC/imagenet-1k)",
}

#: the word each layout's shard names use for a split
_SPLIT_WORDS = {"val": ("validation", "val"), "train": ("train",)}

_PARQUET_RE = re.compile(r"(?:^|/)(validation|val|train)-\d+-of-\d+\.parquet$")
_WDS_RE = re.compile(r"(?:^|/)[^/]*?(validation|val|train)-\d+\.tar$")
_ARCHIVE_RE = re.compile(r"(?:^|/)(val|train)_images(?:_\d+)?\.tar\.gz$")

#: a WordNet id suffix that the Hub's copies add to file names:
#: ``ILSVRC2012_val_00000001_n01751748.JPEG``
_SYNSET_SUFFIX_RE = re.compile(r"^(.+)_(n\d{8})(\.[A-Za-z]+)$")

_PATTERNS = ((PARQUET, _PARQUET_RE), (WEBDATASET, _WDS_RE), (ARCHIVE, _ARCHIVE_RE))


def repo_layout(repo_id: str, files: List[str]) -> str:
    """The layout of a repo, from its file names.

    Returns:
        ``"fiftyone"``, ``"parquet"``, ``"webdataset"`` or ``"archive"``

    Raises:
        ImageNetXError: for a layout none of these
    """
    if any(f in ("fiftyone.yml", "fiftyone.yaml") for f in files):
        return FIFTYONE
    for layout, pattern in _PATTERNS:
        if any(pattern.search(f) for f in files):
            return layout
    raise ImageNetXError(
        f"'{repo_id}' has no layout this project reads: it knows "
        + "; ".join(LAYOUT_TITLES.values())
    )


def split_shards(files: List[str], layout: str, split: str) -> List[str]:
    """The shard files of one split (``"val"`` or ``"train"``), in order."""
    pattern = dict(_PATTERNS)[layout]
    words = _SPLIT_WORDS[split]
    return sorted(f for f in files
                  if (m := pattern.search(f)) and m.group(1) in words)


def imagenet_name(path: Optional[str]) -> Optional[str]:
    """The original ImageNet file name of a path a shard gives.

    ``n01630670/ILSVRC2012_val_00009670.JPEG``,
    ``ILSVRC2012_val_00009670_n01630670.JPEG`` and
    ``ILSVRC2012_val_00009670.JPEG`` all give
    ``ILSVRC2012_val_00009670.JPEG``; train names keep their WordNet id
    prefix (``n01440764_10026.JPEG``).
    """
    if not path:
        return None
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    m = _SYNSET_SUFFIX_RE.match(name)
    if m:
        name = m.group(1) + m.group(3)
    stem, ext = os.path.splitext(name)
    return stem + ".JPEG" if ext.lower() in (".jpeg", ".jpg") else name


def _synset_of(path: str) -> Optional[str]:
    m = _SYNSET_SUFFIX_RE.match(path.replace("\\", "/").rsplit("/", 1)[-1])
    return m.group(2) if m else None


#: ``(file name, class index, image bytes, where in the shard)``: name,
#: label or bytes may be None where the shard lacks them
Member = Tuple[Optional[str], Optional[int], Optional[bytes], str]

#: how image files begin: JPEG, PNG (ImageNet's train split holds a PNG
#: under a .JPEG name), GIF, BMP, WebP (after RIFF....)
_MAGIC = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF8", b"BM")


def image_problem(data: bytes) -> Optional[str]:
    """What is wrong with bytes meant to be an image (None: they are one):
    the magic number of a common format, else PIL must know the header."""
    if data.startswith(_MAGIC) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP"):
        return None
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)):
            return None
    except (UnidentifiedImageError, OSError, ValueError):
        return f"is not an image (its bytes begin {data[:12]!r})"


#: a WordNet id: the name of a training split's class folder
_WNID_RE = re.compile(r"^n\d{8}$")


def name_problem(name: Optional[str]) -> Optional[str]:
    """What makes a member's file name unusable (None: nothing): none, or
    one that names a folder rather than a file in the pull's folder: empty
    (a path ending in ``/``), ``.``, ``..``, a dot name (the pull's own
    ``.shards`` and ``.partial`` folders are dot names), or a WordNet id
    (a training class folder)."""
    if name is None:
        return "has no file name (image.path)"
    if name in ("", ".", "..") or name.startswith("."):
        return f"has an unusable file name {name!r} (a folder, not an image file)"
    if _WNID_RE.match(name):
        return f"has an unusable file name {name!r} (a training class folder's name)"
    return None


def member_problem(member: Member) -> Optional[str]:
    """What makes a shard's member unusable (None: nothing): a file name
    :func:`name_problem` refuses, no image, no label, or bytes that are not
    an image."""
    name, label, data, _ = member
    problem = name_problem(name)
    if problem is not None:
        return problem
    if data is None:
        return "has no image"
    if label is None:
        return "has no label"
    return image_problem(data)


def read_shard(path: str, layout: str, source: str,
               wnid_index: Optional[dict] = None) -> Iterator[Member]:
    """Yields every member of a downloaded shard, in the shard's order, as
    ``(file name, class index, image bytes, where)``; whether a member is
    usable is :func:`member_problem`'s to say.

    Args:
        path: the local shard file
        layout: ``"parquet"``, ``"webdataset"`` or ``"archive"``
        source: the shard's name in the repo, for messages
        wnid_index (None): WordNet id -> class index, for archives (whose
            labels are the file names' WordNet id suffixes)

    Raises:
        ImageNetXError: for a shard its library cannot read (truncated,
            not parquet or tar at all) or without the expected columns
    """
    if layout == PARQUET:
        return _read_parquet(path, source)
    if layout == WEBDATASET:
        return _read_webdataset(path, source)
    return _read_archive(path, source, wnid_index or {})


def _bad_shard(source: str, what: str) -> ImageNetXError:
    return ImageNetXError(
        f"Shard '{source}' {what}: the repo does not hold ImageNet in the "
        "layout its file names suggest; pull it with FiftyOne's load_from_hub "
        "or name another repo"
    )


def _unreadable(source: str, kind: str, e: BaseException) -> ImageNetXError:
    text = (str(e).strip().splitlines() or [""])[0][:200]
    return ImageNetXError(
        f"Shard '{source}' cannot be read as {kind} ({type(e).__name__}: {text}): the "
        "repo holds a damaged file; nothing of it was written and no dataset was made; "
        "tell the repo's owners, or pull a `revision` where it is whole")


def _read_parquet(path: str, source: str) -> Iterator[Member]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        shard = pq.ParquetFile(path)
        names = shard.schema_arrow.names
    except (pa.ArrowException, OSError) as e:
        raise _unreadable(source, "parquet", e) from None
    if "image" not in names or "label" not in names:
        raise _bad_shard(source, f"has columns {names}, not 'image' and 'label'")
    row = 0
    try:
        for batch in shard.iter_batches(batch_size=1024, columns=["image", "label"]):
            images = batch.column("image")
            paths = images.field("path").to_pylist()
            labels = batch.column("label").to_pylist()
            blobs = images.field("bytes").to_pylist()
            for image_path, label, blob in zip(paths, labels, blobs):
                yield (imagenet_name(image_path), None if label is None else int(label),
                       blob, f"row {row}" + (f" ({image_path})" if image_path else ""))
                row += 1
    except (pa.ArrowException, OSError) as e:
        raise _unreadable(source, "parquet", e) from None


def _tar_members(path: str, source: str) -> Iterator[Tuple[str, bytes]]:
    """``(member name, bytes)`` of each file of a tar, in the tar's order.

    tarfile parses the headers; an uncompressed tar's member bytes are then
    one ``os.pread`` of their range each, not tarfile's 10 KB stream reads
    through Python buffers (which made the webdataset pull half as fast as
    plain extraction). A compressed tar is read through tarfile."""
    import zlib

    try:
        with open(path, "rb") as raw, tarfile.open(fileobj=raw, mode="r:*") as tar:
            ranges = tar.fileobj is raw and hasattr(os, "pread")
            for member in tar:
                if not member.isfile():
                    continue
                if ranges and not member.issparse():
                    data = os.pread(raw.fileno(), member.size, member.offset_data)
                    if len(data) != member.size:
                        raise tarfile.ReadError(f"unexpected end of data in {member.name}")
                else:
                    data = tar.extractfile(member).read()
                yield member.name, data
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        raise _unreadable(source, "a tar archive", e) from None


def _read_webdataset(path: str, source: str) -> Iterator[Member]:
    key, parts = None, {}
    for name, data in _tar_members(path, source):
        base = name.rsplit("/", 1)[-1]
        folder = name[: len(name) - len(base)]
        this_key, _, ext = base.partition(".")
        this_key = folder + this_key
        if this_key != key:
            if key is not None:
                yield _wds_sample(key, parts)
            key, parts = this_key, {}
        parts[ext.lower()] = data
    if key is not None:
        yield _wds_sample(key, parts)


def _wds_sample(key: str, parts: dict) -> Member:
    image = parts.get("jpg", parts.get("jpeg", parts.get("png")))
    try:
        label = int(parts["cls"].decode().strip()) if "cls" in parts else None
        meta = json.loads(parts["json"]) if "json" in parts else {}
    except (ValueError, UnicodeDecodeError):
        label, meta = None, {}
    name = imagenet_name(meta.get("filename") or key.rsplit("/", 1)[-1] + ".JPEG")
    return name, label, image, f"sample '{key}'"


def _read_archive(path: str, source: str, wnid_index: dict) -> Iterator[Member]:
    for name, data in _tar_members(path, source):
        if not name.upper().endswith(".JPEG"):
            continue
        synset = _synset_of(name)
        yield (imagenet_name(name), wnid_index.get(synset), data, f"member '{name}'")
