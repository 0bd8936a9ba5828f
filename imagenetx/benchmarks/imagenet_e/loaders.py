"""Load the ImageNet-E release as a grouped FiftyOne dataset.

ImageNet-E (Li et al., CVPR 2023) edits ImageNet validation images one
attribute at a time. Its release (``alibaba/easyrobust``, ``benchmarks/
imagenet-e``: a Google Drive archive) is a folder of flat folders, one per
variant (:data:`~imagenetx.benchmarks.imagenet_e.contract.VARIANTS`), and
``labels.txt``, one ``<ILSVRC2012_val_XXXXXXXX.JPEG> <class index>`` per
line. Originals are ``ori/<stem>.JPEG``, edits ``<variant>/<stem>.png``.

The dataset has one group per labelled source image and one group slice per
variant folder (``ori`` the default), written to the contract of
:mod:`~imagenetx.benchmarks.imagenet_e.contract`. Missing variant folders
are allowed and reported; folders that are not variants are left out and
reported.
"""

import os
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import fiftyone as fo

from imagenetx.benchmarks.imagenet_e.contract import (
    BENCHMARK,
    EDIT_FIELD,
    GROUP_FIELD,
    LEVEL_FIELD,
    ORIGINAL,
    VARIANTS,
    variants,
)
from imagenetx.classes.imagenet import class_table
from imagenetx.errors import ImageNetXError
from imagenetx.benchmarks.imagenet_x.tagging import DEFAULT_FIELD, new_sample_annotations
from imagenetx.benchmarks.imagenet_e.benchmark import ImageNetE
from imagenetx.benchmarks.scenarios import FieldNames
from imagenetx.store.datasets import check_new_dataset_name, mark_benchmark
from imagenetx.store.ingest import insert_samples, new_dataset
from imagenetx.store.schema import (
    declare_classification,
    declare_imagenetx_field,
    new_object_id,
    raw_classification,
)

DEFAULT_NAME = "imagenet-e"
LABELS_FILE = "labels.txt"
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg")
NUM_CLASSES = 1000
RELEASE_LAYOUT = (
    "<root>/labels.txt and <root>/{" + ",".join(v.folder for v in VARIANTS)
    + "}/<ILSVRC2012_val_XXXXXXXX>.{JPEG,png}, as the ImageNet-E archive "
    "(github.com/alibaba/easyrobust, benchmarks/imagenet-e) unpacks"
)


@dataclass
class ReleaseFiles:
    """What :func:`find_release` found in a release folder.

    Attributes:
        root: the folder holding the variant folders and ``labels.txt``
        labels: ``{stem: class index}`` from ``labels.txt``
        files: ``{variant folder: {stem: path}}`` of the labelled images
        missing: the variant folders that are absent
        ignored: the folders that are not variants
        unlabelled: image files whose stem ``labels.txt`` does not list
    """

    root: str
    labels: Dict[str, int]
    files: Dict[str, Dict[str, str]]
    missing: Tuple[str, ...] = ()
    ignored: Tuple[str, ...] = ()
    unlabelled: int = 0


@dataclass
class ImageNetESummary:
    """What :func:`load_imagenet_e` built."""

    dataset: str
    source: str
    groups: int
    by_slice: Dict[str, int]
    missing: Tuple[str, ...] = ()
    ignored: Tuple[str, ...] = ()
    unlabelled: int = 0
    without_original: int = 0
    annotated: int = 0
    samples_total: int = field(init=False, default=0)

    def __post_init__(self):
        self.samples_total = sum(self.by_slice.values())

    def __str__(self):
        slices = ", ".join(f"{n:,} {s}" for s, n in self.by_slice.items())
        text = (f"ImageNet-E dataset '{self.dataset}' from {self.source}: "
                f"{self.groups:,} groups (one per source image), "
                f"{self.samples_total:,} samples ({slices}); "
                f"{self.annotated:,} samples carry ImageNet-X annotations")
        if self.missing:
            text += f"; no folder {', '.join(self.missing)}, so no such slices"
        if self.ignored:
            text += f"; left out folders that are not variants: {', '.join(self.ignored)}"
        if self.unlabelled:
            text += f"; left out {self.unlabelled:,} images that {LABELS_FILE} does not list"
        if self.without_original:
            text += (f"; {self.without_original:,} groups have no original "
                     "(paired scores leave them out)")
        return text


def _release_root(release_dir: str) -> str:
    root = os.path.abspath(os.path.expanduser(release_dir))
    if not os.path.isdir(root):
        raise ImageNetXError(
            f"ImageNet-E folder '{release_dir}' does not exist: pass the "
            f"release folder, laid out as {RELEASE_LAYOUT}")
    known = variants()
    for candidate in (root, os.path.join(root, "ImageNet-E")):
        if os.path.isdir(candidate) and any(
                os.path.isdir(os.path.join(candidate, v)) for v in known):
            return candidate
    raise ImageNetXError(
        f"Folder '{release_dir}' has none of the ImageNet-E variant folders "
        f"({', '.join(known)}): pass the release folder, laid out as "
        f"{RELEASE_LAYOUT}")


def read_labels(path: str) -> Dict[str, int]:
    """``{stem: class index}`` of a ``labels.txt``.

    Raises:
        ImageNetXError: for a missing file or a line that is not
            ``<file name> <class index 0-999>``
    """
    if not os.path.isfile(path):
        raise ImageNetXError(
            f"ImageNet-E folder '{os.path.dirname(path)}' has no {LABELS_FILE}: "
            "the release's labels.txt (one '<ILSVRC2012_val_XXXXXXXX.JPEG> "
            "<class index>' per line) says each source image's class; copy it "
            "into the folder")
    labels = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            ok = len(parts) == 2 and parts[1].isdigit() and int(parts[1]) < NUM_CLASSES
            if not ok:
                raise ImageNetXError(
                    f"{path}, line {number}: '{line.strip()}' is not "
                    "'<file name> <class index 0-999>': fix or replace the file")
            labels[os.path.splitext(parts[0])[0]] = int(parts[1])
    if not labels:
        raise ImageNetXError(f"{path} lists no image: use the release's {LABELS_FILE}")
    return labels


def find_release(release_dir: str) -> ReleaseFiles:
    """Finds the labelled images of an ImageNet-E release folder.

    Accepts the release folder or a folder holding ``ImageNet-E/``.

    Raises:
        ImageNetXError: for a missing folder, no variant folder, no ``ori/``
            folder, a missing or bad ``labels.txt``, or no labelled image
    """
    root = _release_root(release_dir)
    labels = read_labels(os.path.join(root, LABELS_FILE))
    known = variants()
    if not os.path.isdir(os.path.join(root, ORIGINAL)):
        raise ImageNetXError(
            f"ImageNet-E folder '{release_dir}' has no {ORIGINAL}/ folder: the "
            "originals are what every edit is compared with; copy the "
            f"release's {ORIGINAL}/ folder into it")
    files, unlabelled = {}, 0
    ignored = sorted(e.name for e in os.scandir(root)
                     if e.is_dir() and e.name not in known and not e.name.startswith("."))
    for v in VARIANTS:
        folder = os.path.join(root, v.folder)
        if not os.path.isdir(folder):
            continue
        found = {}
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if not entry.is_file() or not entry.name.lower().endswith(IMAGE_EXTENSIONS):
                continue
            stem = os.path.splitext(entry.name)[0]
            if stem in labels:
                found[stem] = entry.path
            else:
                unlabelled += 1
        files[v.folder] = found
    if not any(files.values()):
        raise ImageNetXError(
            f"ImageNet-E folder '{release_dir}' has no image that {LABELS_FILE} "
            f"lists: expected {RELEASE_LAYOUT}")
    missing = tuple(v.folder for v in VARIANTS if v.folder not in files)
    return ReleaseFiles(root, labels, files, missing, tuple(ignored), unlabelled)


def load_imagenet_e(
    release_dir: str,
    name: Optional[str] = None,
    overwrite: bool = False,
    gt_field: str = "ground_truth",
) -> Tuple[fo.Dataset, ImageNetESummary]:
    """Builds a grouped dataset from the ImageNet-E release folder.

    One group per source image that has any image, one slice per variant
    folder (``ori`` the default), each sample written once with the
    contract fields and the ImageNet-X annotations of its source image
    (matched by file stem, as
    :func:`~imagenetx.benchmarks.imagenet_x.tagging.tag_dataset` does).

    Args:
        release_dir: the release folder (see :func:`find_release`)
        name (None): the dataset name, ``imagenet-e`` by default
        overwrite (False): whether to replace an existing dataset
        gt_field ("ground_truth"): the ground truth field to write

    Returns:
        ``(dataset, ImageNetESummary)``

    Raises:
        ImageNetXError: before anything is written, for a bad folder or an
            existing name without ``overwrite``
    """
    name = name or DEFAULT_NAME
    check_new_dataset_name(name, overwrite)
    release = find_release(release_dir)
    stems = sorted({s for found in release.files.values() for s in found})
    rows = [(v, stem, path) for v, found in release.files.items()
            for stem, path in found.items()]
    # the ImageNet-X fields of each source image, on all its slices
    annotations, tagged = new_sample_annotations(
        name, [os.path.basename(path) for _, _, path in rows], by_stem=True)
    groups = {s: new_object_id() for s in stems}
    labels, names, known = release.labels, class_table().labels, variants()

    with new_dataset(name, overwrite) as dataset:
        dataset.add_group_field(GROUP_FIELD, default=ORIGINAL)
        declare_classification(dataset, gt_field)
        for field_name in (EDIT_FIELD, LEVEL_FIELD):
            dataset.add_sample_field(field_name, fo.StringField)
        declare_imagenetx_field(dataset, DEFAULT_FIELD)
        insert_samples(dataset, (
            {
                "filepath": path,
                GROUP_FIELD: {"_id": groups[stem], "_cls": "Group", "name": v},
                gt_field: raw_classification(names[labels[stem]], labels[stem]),
                EDIT_FIELD: known[v].edit,
                LEVEL_FIELD: known[v].level,
                **(fields or {}),
            }
            for (v, stem, path), fields in zip(rows, annotations)
        ))
        mark_benchmark(dataset, BENCHMARK)
        ImageNetE().tagged(dataset, FieldNames(gt_field=gt_field))
    originals = release.files.get(ORIGINAL, {})
    summary = ImageNetESummary(
        dataset=dataset.name, source=release.root, groups=len(stems),
        by_slice={v: len(found) for v, found in release.files.items() if found},
        missing=release.missing, ignored=release.ignored,
        unlabelled=release.unlabelled,
        without_original=sum(s not in originals for s in stems),
        annotated=tagged.annotated)
    return dataset, summary

