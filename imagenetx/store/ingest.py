"""Create a new dataset's samples in bulk: raw documents, one pass.

Loaders feed :func:`insert_samples` with *rows*, one dict per image: its
``filepath`` and every field in FiftyOne's stored form (what
``Document.to_mongo()`` returns, e.g.
:func:`~imagenetx.store.schema.raw_classification`), tags included. Each
row becomes the document that ``Dataset.add_samples()`` would insert for a
``fo.Sample`` with those fields, and the documents go to the database with
``insert_many`` while the next ones are built. ``add_samples()`` spends most
of its time per sample in Python (a ``Sample``, schema checks, a
mongoengine document, a JSON size estimate); here a sample costs one dict.

The caller declares the fields once, beforehand (``add_sample_field``, as
the rest of the project does), inside :func:`new_dataset`, which deletes
what it built when anything fails and replaces an existing dataset only
once the new one is complete. A file named as an image (``.jpg``, ``.png``,
...) that does not start as one is refused in one line (:func:`check_image`):
the dataset it was part of is deleted.
"""

import contextlib
import os
import random
import uuid
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Iterable, Iterator

import fiftyone as fo
import fiftyone.core.media as fom
import fiftyone.core.metadata as fome
import fiftyone.core.storage as fos
from pymongo.errors import BulkWriteError

from imagenetx.errors import ImageNetXError
from imagenetx.memory import gc_paused
from imagenetx.store.datasets import check_new_dataset_name, replace_dataset
from imagenetx.store.schema import new_object_ids

#: documents per ``insert_many``: large enough to amortize a round trip,
#: small enough to overlap building and inserting
INSERT_CHUNK = 8192

#: inserts in flight at once
WRITERS = 2

# FiftyOne draws ``_rand`` from its own generator for the same reason
_random = random.Random()

#: the extensions whose files :func:`check_image` reads, and the first bytes
#: of the formats they hold (any of them: a PNG named .jpg decodes all the same)
IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".jpe", ".png", ".gif", ".bmp", ".webp",
                              ".tif", ".tiff"})
_SIGNATURES = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"BM",
               b"II*\x00", b"MM\x00*")


def check_image(path: str) -> None:
    """Raises ImageNetXError when the file at ``path``, named as an image,
    does not start as a JPEG, PNG, GIF, BMP, WebP or TIFF does (an HTML
    error page saved under an image's name, an empty file). Reads 12 bytes
    (about 20 us a file); a file that cannot be opened is left to the
    reader of its pixels.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        head = os.read(fd, 12)
    except OSError:
        return
    finally:
        os.close(fd)
    if head.startswith(_SIGNATURES) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP"):
        return
    what = (f"its first bytes {head[:4].hex()} start no JPEG, PNG, GIF, BMP, WebP or TIFF"
            if head else "it is empty")
    raise ImageNetXError(
        f"File '{path}' is named as an image but is not one ({what}): replace it with the "
        "image, or remove it from the folder, then load again")


@contextlib.contextmanager
def new_dataset(name: str, overwrite: bool = False,
                staged: bool = False) -> Iterator[fo.Dataset]:
    """A new, empty persistent dataset to fill, all or nothing.

    The dataset is built under a temporary name when ``name`` exists and
    ``overwrite`` is set, or when ``staged`` (a fill that takes long, such
    as a pull from the Hub, that a ``kill -9`` may interrupt); it takes
    ``name`` only when the block ends without an error. A staged dataset is
    not persistent until then, so FiftyOne deletes one that a killed
    process left behind. On an error (or an interrupt) the new dataset is
    deleted and an existing one stays as it was.

    Raises:
        ImageNetXError: if ``name`` exists and ``overwrite`` is False
    """
    check_new_dataset_name(name, overwrite)
    replacing = fo.dataset_exists(name)
    temp = (f"{name}.loading-{uuid.uuid4().hex[:8]}" if replacing or staged else name)
    dataset = fo.Dataset(temp)
    dataset.persistent = not staged
    try:
        yield dataset
        dataset.persistent = True  # whole: kept, should a kill come before the rename
        if temp != name:
            if fo.dataset_exists(name):
                check_new_dataset_name(name, overwrite)  # made meanwhile by someone else
                replace_dataset(name)
            dataset.name = name
    except BaseException:
        dataset.delete()
        raise


@gc_paused()
def insert_samples(dataset: fo.Dataset, rows: Iterable[dict]) -> int:
    """Inserts one new sample per row, as ``add_samples()`` would.

    Each row holds ``filepath`` (made absolute and normalized as FiftyOne
    does), optionally ``tags`` (a list of str), and other sample fields in
    their stored form, already declared on the dataset; None values are
    left out, as FiftyOne does. A dataset without a media type gets that of the first file, and
    on a grouped dataset each new group slice is declared with its media
    type, as ``add_samples()`` does.

    Args:
        dataset: the dataset, whose fields the rows use are declared
        rows: an iterable of dicts, one per sample; consumed once

    Returns:
        the number of samples inserted

    Raises:
        ImageNetXError: if the database refuses a document, or a file named
            as an image is not one (:func:`check_image`); the samples
            inserted before stay (use :func:`new_dataset` to drop them)
    """
    coll = dataset._sample_collection
    documents = _Documents(dataset)
    inserted = 0
    pending = deque()
    checks = deque()
    # the files' first bytes are read beside the building and the inserts
    # (the reads let go of the GIL: 13% of a 50,000-file load instead of 35%);
    # a bad file stops the load at the next chunk after its read
    with ThreadPoolExecutor(max_workers=WRITERS) as pool, ThreadPoolExecutor(1) as reader:
        for chunk in _chunks(rows, INSERT_CHUNK):
            docs = documents.make(chunk)
            while checks and checks[0].done():
                checks.popleft().result()
            checks.append(reader.submit(_check_images, documents.images))
            documents.images = []
            if len(pending) == WRITERS:
                pending.popleft().result()
            pending.append(pool.submit(_insert, coll, docs, inserted))
            inserted += len(docs)
        for future in pending:
            future.result()
        for future in checks:
            future.result()
    dataset.reload()
    return inserted


def _check_images(paths: list) -> None:
    for path in paths:
        check_image(path)


class _Documents:
    """Makes the documents ``Dataset._make_dict()`` makes for new samples,
    with the same keys in the same order, from rows."""

    def __init__(self, dataset: fo.Dataset):
        self.dataset = dataset
        self.dataset_id = dataset._doc.id
        grouped = dataset.media_type == fom.GROUP
        self.group_field = dataset.group_field if grouped else None
        self.slices = set(dataset.group_media_types) if grouped else set()
        self.folders = {}  # folder as given -> normalized, with a separator
        self.media_types = {}  # extension -> (media type, whether its files are read)
        self.images = []  # the paths of the files check_image reads, not yet read

    def make(self, rows: list) -> list:
        now = datetime.utcnow()  # one time per batch, as add_samples()
        docs = []
        for row, sample_id in zip(rows, new_object_ids(len(rows))):
            path = self._normalize(row["filepath"])
            media_type, read = self._media_type(path)
            if read:
                self.images.append(path)
            doc = {
                "_id": sample_id,
                "filepath": path,
                "tags": [],
                "_media_type": media_type,
                "_rand": _random.random() * 0.001 + 0.999,
            }
            doc.update(row)  # the row's values replace the placeholders
            doc["filepath"] = path
            if None in row.values():  # FiftyOne leaves out None values
                if doc["tags"] is None:
                    doc["tags"] = []
                doc = {k: v for k, v in doc.items() if v is not None}
            doc["_dataset_id"] = self.dataset_id
            doc["created_at"] = now
            doc["last_modified_at"] = now
            if self.group_field is not None:
                self._declare_slice(doc[self.group_field]["name"], media_type)
            docs.append(doc)
        return docs

    def _normalize(self, path: str) -> str:
        """``fiftyone.core.storage.normalize_path``, once per folder."""
        folder = path[: path.rfind(os.sep) + 1]
        normalized = self.folders.get(folder)
        if normalized is None:
            normalized = self.folders[folder] = os.path.join(
                fos.normalize_path(folder or os.curdir), "")
        return normalized + path[len(folder):]

    def _media_type(self, path: str) -> tuple:
        """The file's media type, and whether :func:`check_image` reads it."""
        dot = path.rfind(".")
        ext = path[dot:] if dot > path.rfind(os.sep) + 1 else ""
        known = self.media_types.get(ext)
        if known is None:
            media_type = fom.get_media_type(path)
            known = self.media_types[ext] = (
                media_type, media_type == fom.IMAGE and ext.lower() in IMAGE_EXTENSIONS)
            if self.dataset.media_type is None:  # as add_samples() sets it
                self.dataset.media_type = media_type
        return known

    def _declare_slice(self, name: str, media_type: str) -> None:
        if name not in self.slices:
            _add_group_slice(self.dataset, name, media_type)
            self.slices.add(name)


def _add_group_slice(dataset: fo.Dataset, name: str, media_type: str) -> None:
    """Declares a group slice as ``add_samples()`` does: the first slice of
    a media type also merges that type's metadata fields into the
    dataset's generic ``metadata`` field."""
    if media_type not in set(dataset.group_media_types.values()):
        if dataset._sample_doc_cls.merge_field_schema(
            {"metadata": fo.EmbeddedDocumentField(fome.get_metadata_cls(media_type))},
            validate=False,
        ):
            dataset._reload()
    dataset.add_group_slice(name, media_type)


def _chunks(rows: Iterable[dict], size: int) -> Iterator[list]:
    chunk = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _insert(coll, docs: list, offset: int) -> None:
    try:
        coll.insert_many(docs)
    except BulkWriteError as error:
        first = error.details["writeErrors"][0]
        raise ImageNetXError(
            f"The database refused sample {offset + first['index'] + 1:,} "
            f"({docs[first['index']].get('filepath')}): {first.get('errmsg')}"
        ) from error

