"""Load ImageNet-D's images onto FiftyOne.

4,835 diffusion-generated images of 113 classes (those ImageNet shares with
ObjectNet), in three nuisance subsets: background (3,764), texture (498)
and material (573). A 1000-way ImageNet model is right on an image when its
top class is any of the image's ImageNet-1k indices.

Sample contract (every loader here writes exactly this):

-   ``ground_truth``: ``fo.Classification`` with ``label`` (the ImageNet-D
    display name, ``binder_(closed)``), ``class_index`` (the ImageNet-D id,
    0-112), ``imagenet_indices`` (list of int: the class's ImageNet-1k
    indices, ``[423, 559, 765]`` for ``chair``) and ``class_dir`` (the
    release's folder name, ``binder_closed``)
-   ``nuisance``: str, ``background``, ``texture`` or ``material``
-   ``nuisance_value``: str, the specific background / texture / material,
    a name from the packaged vocabularies (``street-s``, ``dotted``,
    ``wood``), where the data says it; else None
-   ``dataset.info["imagenetx"]["benchmark"] == "imagenet_d"``

Where the nuisance value could come from, and what was found: the
generating vocabularies are public (``nuisances/{background,texture,
material}.csv``: 468 Broden scenes, 47 DTD textures, 32 Broden materials;
shipped in ``imagenetx/classes/data/imagenet_d``), but the release does not
say per image which one was used. Its images are
``<subset>/<class folder>/<id>.png`` with numeric ids, and its
``questions/<subset>.csv`` (tab-separated) hold ``image_dir``,
``gt_category`` and the surrogate models' ``top1_pred_cate`` /
``top2_pred_cate``, as the authors' LLaVA evaluation reads them: no
nuisance column. So ``nuisance_value`` is None for the release. The loaders
still fill it where a copy carries it: a file name whose stem (less a
leading class name and a trailing number) is a vocabulary entry of its
subset (``wood_7.png``), or, for a Hub dataset, a string or label field
whose values are all vocabulary entries.

Loaders:

-   :func:`load_imagenet_d_dir`: the release folder
    ``ImageNet-D/{background,texture,material}/<class folder>/<id>.png``
-   :func:`load_imagenet_d_hub`: a Hub repo, either a FiftyOne export (such
    as ``Voxel51/ImageNet-D``, converted by :func:`from_hub_dataset`) or the
    authors' plain release repo ``zcs15/ImageNet-D``
-   :func:`from_hub_dataset`: converts an already loaded dataset in place
"""

import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import fiftyone as fo
from bson import ObjectId

from imagenetx.classes.imagenet_d import (
    NUISANCES,
    NUM_CLASSES,
    ImageNetDClass,
    class_by_folder,
    class_prefix,
    find_class,
    find_nuisance_value,
    normalize,
)
from imagenetx.errors import ImageNetXError
from imagenetx.store.bulk import chunked, write_raw
from imagenetx.benchmarks.imagenet_d.benchmark import ImageNetD
from imagenetx.benchmarks.scenarios import FieldNames
from imagenetx.store.datasets import check_new_dataset_name, get_dataset, mark_benchmark
from imagenetx.store.ingest import insert_samples, new_dataset
from imagenetx.store.schema import declare_classification, raw_classification
from imagenetx.store import hub

BENCHMARK = "imagenet_d"
DEFAULT_NAME = "imagenet-d"
DEFAULT_GT_FIELD = "ground_truth"
NUISANCE_FIELD = "nuisance"
VALUE_FIELD = "nuisance_value"
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg")

RELEASE_REPO = "zcs15/ImageNet-D"
RELEASE_LAYOUT = (
    "ImageNet-D/{background,texture,material}/<class folder>/<id>.png, as "
    f"https://huggingface.co/datasets/{RELEASE_REPO} or the authors' archive "
    "(github.com/chenshuang-zhang/imagenet_d) unpacks"
)


@dataclass
class ImageNetDSummary:
    """What an ImageNet-D loader found and wrote."""

    dataset: str
    source: str
    by_nuisance: Dict[str, int]
    classes: int
    nuisance_values: int = 0
    missing_nuisances: Tuple[str, ...] = ()
    removed: int = 0
    class_source: str = ""

    @property
    def samples(self) -> int:
        return sum(self.by_nuisance.values())

    def __str__(self):
        kinds = ", ".join(f"{n:,} {k}" for k, n in self.by_nuisance.items())
        text = (
            f"ImageNet-D dataset '{self.dataset}' from {self.source}: "
            f"{self.samples:,} images ({kinds}) of {self.classes} of "
            f"{NUM_CLASSES} classes; "
            + (
                f"{self.nuisance_values:,} with a nuisance value"
                if self.nuisance_values
                else "the data names no specific nuisance values"
            )
        )
        if self.class_source:
            text += f"; classes read from {self.class_source}"
        for kind in self.missing_nuisances:
            text += f"; no {kind}/ folder, so no {kind} images"
        if self.removed:
            text += (
                f"; removed {self.removed:,} non-image samples (the release's "
                "question tables)"
            )
        return text


def _summary(dataset, source, kinds, classes, values, **kwargs) -> ImageNetDSummary:
    by_nuisance = {k: kinds.count(k) for k in NUISANCES if k in kinds}
    return ImageNetDSummary(
        dataset=dataset.name,
        source=source,
        by_nuisance=by_nuisance,
        classes=len({c.index for c in classes}),
        nuisance_values=sum(v is not None for v in values),
        **kwargs,
    )


def _is_image(path: str) -> bool:
    return path.lower().endswith(IMAGE_EXTENSIONS)


def _value_from_stem(stem: str, kind: str, klass: ImageNetDClass) -> Optional[str]:
    """The nuisance value a file name stem names, less a leading class name
    and a trailing number (``wood_7``, ``chair_bedroom-s_3``), else None."""
    key = normalize(stem)
    for name in (normalize(klass.folder), normalize(klass.name)):
        if key.startswith(name + "_"):
            key = key[len(name) + 1:]
            break
    key = re.sub(r"(^|_)\d+$", "", key)
    return find_nuisance_value(key, kind)


# -- the release folder ------------------------------------------------------


def _release_root(release_dir: str) -> str:
    """The folder holding ``background/``, ``texture/``, ``material/``: the
    given one or its ``ImageNet-D/`` child."""
    root = os.path.abspath(os.path.expanduser(release_dir))
    if not os.path.isdir(root):
        raise ImageNetXError(
            f"ImageNet-D folder '{release_dir}' does not exist: pass the "
            f"release folder, laid out as {RELEASE_LAYOUT}"
        )
    for candidate in (root, os.path.join(root, "ImageNet-D")):
        if any(os.path.isdir(os.path.join(candidate, k)) for k in NUISANCES):
            return candidate
    subdirs = [e.name for e in os.scandir(root) if e.is_dir()]
    known = sorted(d for d in subdirs if d in class_by_folder())
    if known:
        raise ImageNetXError(
            f"ImageNet-D folder '{release_dir}' holds class folders "
            f"({', '.join(known[:3])}) but no background/, texture/ or "
            "material/ folder: it looks like one nuisance subset; pass its "
            "parent, the release folder"
        )
    raise ImageNetXError(
        f"Folder '{release_dir}' has none of the ImageNet-D release folders "
        f"background/, texture/, material/: pass the release folder, laid "
        f"out as {RELEASE_LAYOUT}"
    )


def find_release_images(release_dir: str) -> Tuple[str, list, Tuple[str, ...]]:
    """Finds the images of an ImageNet-D release folder.

    Accepts the release folder itself or a folder holding ``ImageNet-D/``.
    A missing nuisance folder is allowed (and reported); the
    ``questions/`` folder and other files are ignored.

    Returns:
        ``(root, images, missing nuisances)``; ``images`` is a sorted list
        of ``(path, nuisance, ImageNetDClass, nuisance value or None)``

    Raises:
        ImageNetXError: if the folder is missing, has no nuisance folder,
            has class folders that are not ImageNet-D classes, or no images
    """
    root = _release_root(release_dir)
    classes = class_by_folder()
    images, unknown, missing = [], [], []
    for kind in NUISANCES:
        folder = os.path.join(root, kind)
        if not os.path.isdir(folder):
            missing.append(kind)
            continue
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            klass = classes.get(entry.name)
            if klass is None:
                unknown.append(f"{kind}/{entry.name}")
                continue
            for f in sorted(os.scandir(entry.path), key=lambda e: e.name):
                if f.is_file() and _is_image(f.name):
                    stem = os.path.splitext(f.name)[0]
                    value = _value_from_stem(stem, kind, klass)
                    images.append((f.path, kind, klass, value))
    if unknown:
        shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        raise ImageNetXError(
            f"Folder '{release_dir}' has {len(unknown)} class folders that are "
            f"not ImageNet-D classes ({shown}): the release names each class "
            f"folder as its 113 classes do (alarm_clock, chair, ...), laid out "
            f"as {RELEASE_LAYOUT}; remove or rename those folders"
        )
    if not images:
        raise ImageNetXError(
            f"ImageNet-D folder '{release_dir}' has nuisance folders but no "
            f"images in their class folders: expected {RELEASE_LAYOUT}"
        )
    return root, images, tuple(missing)


def load_imagenet_d_dir(
    release_dir: str,
    name: Optional[str] = None,
    overwrite: bool = False,
    gt_field: str = DEFAULT_GT_FIELD,
) -> Tuple[fo.Dataset, ImageNetDSummary]:
    """Builds a dataset from the ImageNet-D release folder.

    Args:
        release_dir: the release folder (see :func:`find_release_images`)
        name (None): the dataset name, ``imagenet-d`` by default
        overwrite (False): whether to replace an existing dataset
        gt_field ("ground_truth"): the ground truth field to write

    Returns:
        ``(dataset, ImageNetDSummary)``

    Raises:
        ImageNetXError: before anything is written, for a bad folder or an
            existing name without ``overwrite``
    """
    name = name or DEFAULT_NAME
    root, images, missing = find_release_images(release_dir)
    check_new_dataset_name(name, overwrite)
    return _build(name, overwrite, gt_field, root, images, missing)


def _build(name, overwrite, gt_field, root, images, missing):
    """Makes the dataset of found release images, in bulk: ground truth,
    nuisance and nuisance value in the same documents."""
    with new_dataset(name, overwrite) as dataset:
        _declare_contract(dataset, gt_field)
        insert_samples(dataset, (
            {"filepath": path, **_contract(gt_field, kind, c, value)}
            for path, kind, c, value in images
        ))
        mark_benchmark(dataset, BENCHMARK)
        ImageNetD().tagged(dataset, FieldNames(gt_field=gt_field))
    kinds, classes, values = (list(c) for c in list(zip(*images))[1:])
    return dataset, _summary(
        dataset, root, kinds, classes, values, missing_nuisances=missing
    )


def _declare_contract(dataset, gt_field) -> None:
    declare_classification(
        dataset, gt_field,
        imagenet_indices=(fo.ListField, fo.IntField), class_dir=fo.StringField,
    )
    for name in (NUISANCE_FIELD, VALUE_FIELD):
        if not dataset.has_field(name):
            dataset.add_sample_field(name, fo.StringField)


def _contract(gt_field, kind, c: ImageNetDClass, value) -> dict:
    """The contract fields of an image, in stored form."""
    return {
        gt_field: raw_classification(
            c.name, c.index,
            imagenet_indices=list(c.imagenet_indices), class_dir=c.folder,
        ),
        NUISANCE_FIELD: kind,
        VALUE_FIELD: value,
    }


def _write_contract(dataset, ids, kinds, classes, values, gt_field) -> None:
    """Writes ground truth, nuisance and nuisance value of existing samples
    in bulk and marks the dataset as ImageNet-D."""
    _declare_contract(dataset, gt_field)
    rows = list(zip(ids, kinds, classes, values))
    write_raw(dataset, (
        {ObjectId(i): _contract(gt_field, kind, c, value) for i, kind, c, value in chunk}
        for chunk in chunked(rows)
    ))
    mark_benchmark(dataset, BENCHMARK)
    ImageNetD().tagged(dataset, FieldNames(gt_field=gt_field))


# -- datasets loaded from the Hub --------------------------------------------


@dataclass
class _Columns:
    """The columns of a dataset that may say nuisance, class or value."""

    ids: list
    paths: list
    tags: list
    fields: Dict[str, list] = field(default_factory=dict)  # path -> values


def _read_columns(dataset, gt_field: str) -> _Columns:
    """Reads ids, paths, tags, every top-level string field and every
    ``fo.Classification`` label in one query."""
    schema = dataset.get_field_schema()
    labels = sorted(
        name
        for name, f in schema.items()
        if isinstance(f, fo.EmbeddedDocumentField)
        and issubclass(f.document_type, fo.Classification)
    )
    strings = sorted(
        name
        for name, f in schema.items()
        if isinstance(f, fo.StringField) and name != "filepath"
    )
    # the ground truth first: it is where a label most likely lives
    labels.sort(key=lambda n: n != gt_field)
    paths = [f"{n}.label" for n in labels] + strings
    values = dataset.values(["id", "filepath", "tags", *paths])
    return _Columns(
        values[0], values[1], values[2], dict(zip(paths, values[3:]))
    )


def _nuisance_of_path(path: str) -> Optional[str]:
    parts = os.path.normpath(path).split(os.sep)[-4:-1]
    for part in reversed(parts):
        if part in NUISANCES:
            return part
    return None


def _nuisance_of_text(text: Optional[str]) -> Optional[str]:
    """The nuisance a field value names, directly or as a release path."""
    if not text:
        return None
    kind = normalize(text)
    if kind in NUISANCES:
        return kind
    return _nuisance_of_path(text) if "/" in text else None


def _find_nuisances(cols: _Columns, images: List[int]):
    """``(nuisance of each image, field path or None)``, else None."""
    for path, values in cols.fields.items():
        kinds = [_nuisance_of_text(values[i]) for i in images]
        if all(kinds):
            return kinds, path
    kinds = []
    for i in images:
        found = [t for t in cols.tags[i] or () if t in NUISANCES]
        kinds.append(found[0] if len(found) == 1 else None)
    if all(kinds):
        return kinds, None
    kinds = [_nuisance_of_path(cols.paths[i]) for i in images]
    if all(kinds):
        return kinds, None
    return None


def _class_of_path(path: str) -> Optional[ImageNetDClass]:
    folder = os.path.basename(os.path.dirname(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    return find_class(folder) or class_prefix(stem)


def _class_of_text(text: Optional[str]) -> Optional[ImageNetDClass]:
    """The class a field value names, directly or as a release path."""
    if not text:
        return None
    return find_class(text) or (_class_of_path(text) if "/" in text else None)


def _find_classes(cols: _Columns, images: List[int], skip: Optional[str]):
    """``(class of each image or None, field path or None for paths)``."""
    for path, values in cols.fields.items():
        if path == skip:
            continue
        classes = [_class_of_text(values[i]) for i in images]
        if all(classes):
            return classes, path
    return [_class_of_path(cols.paths[i]) for i in images], None


def _find_values(cols: _Columns, images, kinds, classes, skip: set):
    """The nuisance value of each image (None where not said)."""
    for path, values in cols.fields.items():
        if path in skip:
            continue
        raw = [values[i] for i in images]
        if not any(raw):
            continue
        found = [
            find_nuisance_value(v, k) if v else None for v, k in zip(raw, kinds)
        ]
        if all(f is not None for f, v in zip(found, raw) if v):
            return found
    return [
        _value_from_stem(
            os.path.splitext(os.path.basename(cols.paths[i]))[0], k, c
        )
        for i, k, c in zip(images, kinds, classes)
    ]


def looks_like_imagenet_d(dataset) -> bool:
    """Whether a dataset's fields, tags or paths give every image one of the
    three ImageNet-D nuisances (background / texture / material)."""
    dataset = get_dataset(dataset)
    if not len(dataset):
        return False
    cols = _read_columns(dataset, DEFAULT_GT_FIELD)
    images = [i for i, p in enumerate(cols.paths) if _is_image(p)]
    return bool(images) and _find_nuisances(cols, images) is not None


def from_hub_dataset(
    dataset, gt_field: str = DEFAULT_GT_FIELD, source: Optional[str] = None
) -> ImageNetDSummary:
    """Converts a loaded copy of ImageNet-D to the sample contract, in place.

    Reads the schema at run time. The nuisance comes from a label or
    string field whose values are all ``background`` / ``texture`` /
    ``material`` (such as a ``ground_truth`` made from the release's top
    folders), else from sample tags, else from the file paths. The class
    comes from a field whose values all name ImageNet-D classes, else from
    each file's folder (``.../<class folder>/<id>.png``) or a file name that
    begins with a class name. Samples that are not images (the release's
    ``questions/*.csv`` imported as samples) are removed. ``gt_field``,
    ``nuisance`` and ``nuisance_value`` are replaced.

    Args:
        dataset: a dataset or its name
        gt_field ("ground_truth"): the ground truth field to write
        source (None): where the data came from, for the summary

    Returns:
        an :class:`ImageNetDSummary`

    Raises:
        ImageNetXError: before anything is written, if the nuisance or the
            object class of any image cannot be found
    """
    dataset = get_dataset(dataset)
    cols = _read_columns(dataset, gt_field)
    images = [i for i, p in enumerate(cols.paths) if _is_image(p)]
    others = [cols.ids[i] for i, p in enumerate(cols.paths) if not _is_image(p)]
    found = _find_nuisances(cols, images) if images else None
    if found is None:
        raise ImageNetXError(
            f"Dataset '{dataset.name}' does not say which ImageNet-D nuisance "
            "(background, texture or material) each image has: no field, "
            "sample tag or file path names one. Load the release folder "
            f"instead, ImageNet-D from `dir=...` (laid out as {RELEASE_LAYOUT})"
        )
    kinds, kind_path = found
    classes, class_path = _find_classes(cols, images, skip=kind_path)
    lost = [i for i, c in zip(images, classes) if c is None]
    if lost:
        example = cols.paths[lost[0]]
        fields = ", ".join(cols.fields) or "none"
        raise ImageNetXError(
            f"Dataset '{dataset.name}' does not say which of the "
            f"{NUM_CLASSES} ImageNet-D object classes {len(lost):,} of its "
            f"{len(images):,} images show: no field (of: {fields}) names a "
            "class, and neither do their file paths (e.g. "
            f"'{os.path.join(*example.split(os.sep)[-3:])}'); this copy keeps "
            "only the nuisance. Download the authors' release "
            f"(https://huggingface.co/datasets/{RELEASE_REPO}) and load it as "
            f"ImageNet-D from `dir=...`, or from `hub='{RELEASE_REPO}'`"
        )
    values = _find_values(cols, images, kinds, classes, {kind_path, class_path})

    # all read and checked: now replace what is in the way, then write
    if others:
        dataset.delete_samples(others)
    if dataset.has_field(gt_field) and not _is_classification(dataset, gt_field):
        dataset.delete_sample_field(gt_field)
    for name in (NUISANCE_FIELD, VALUE_FIELD):
        if dataset.has_field(name) and not isinstance(
            dataset.get_field(name), fo.StringField
        ):
            dataset.delete_sample_field(name)
    # FiftyOne's class lists named the nuisances, no longer the labels
    if set(dataset.default_classes) <= set(NUISANCES) | {"questions"}:
        dataset.default_classes = []
    if gt_field in dataset.classes:
        dataset.classes = {k: v for k, v in dataset.classes.items() if k != gt_field}
    ids = [cols.ids[i] for i in images]
    _write_contract(dataset, ids, kinds, classes, values, gt_field)
    return _summary(
        dataset, source or f"dataset '{dataset.name}'", kinds, classes, values,
        removed=len(others),
        class_source=f"field '{class_path}'" if class_path else "file paths",
    )


def _is_classification(dataset, name: str) -> bool:
    f = dataset.get_field(name)
    return isinstance(f, fo.EmbeddedDocumentField) and issubclass(
        f.document_type, fo.Classification
    )


def is_imagenet_d_repo(repo_id: str) -> bool:
    """Whether a Hub repo's name says ImageNet-D (``Voxel51/ImageNet-D``,
    ``org/imagenet_d-mini``; not ``ImageNet-Dogs``)."""
    repo_name = (repo_id or "").rsplit("/", 1)[-1]
    return re.search(r"imagenet[-_]?d(?![a-z0-9])", repo_name, re.I) is not None


def convert_pulled(dataset: fo.Dataset, repo_id: str, gt_field: str) -> ImageNetDSummary:
    """:func:`from_hub_dataset` on a dataset just pulled from the Hub; the
    dataset is deleted when it cannot be converted, leaving nothing behind."""
    try:
        return from_hub_dataset(dataset, gt_field=gt_field, source=f"the Hub repo '{repo_id}'")
    except BaseException:
        dataset.delete()
        raise


def load_imagenet_d_hub(
    repo_id: str,
    split: Optional[str] = None,
    max_samples: Optional[int] = None,
    name: Optional[str] = None,
    overwrite: bool = False,
    gt_field: str = DEFAULT_GT_FIELD,
    token: Optional[str] = None,
) -> Tuple[fo.Dataset, ImageNetDSummary]:
    """Loads ImageNet-D from a Hugging Face Hub repo.

    A FiftyOne-format repo (with ``fiftyone.yml``, as ``Voxel51/ImageNet-D``)
    goes through FiftyOne's ``load_from_hub`` and :func:`from_hub_dataset`;
    a plain repo in the release layout (``zcs15/ImageNet-D``) is downloaded
    with ``huggingface_hub`` and read by :func:`load_imagenet_d_dir`.

    Args:
        repo_id: ``ORG/NAME``
        split (None): the split, for FiftyOne-format repos with several
        max_samples (None): the most images to load
        name (None): the dataset name, the repo id by default
        overwrite (False): whether to replace an existing dataset
        gt_field ("ground_truth"): the ground truth field to write
        token (None): a Hugging Face token (default: ``HF_TOKEN``)

    Returns:
        ``(dataset, ImageNetDSummary)``; for a FiftyOne-format repo the
        summary is a :class:`~imagenetx.store.hub.PulledRepo` that wraps it
        (and says the samples dropped for media outside the repo)

    Raises:
        ImageNetXError: for Hub errors, a repo in neither form, or a copy
            that does not say each image's class (nothing is kept then)
    """

    hub.check_repo_id(repo_id)
    name = name or repo_id
    check_new_dataset_name(name, overwrite)
    files = hub.repo_files(repo_id, token=token)
    if hub.is_fiftyone_repo(files):
        dataset, dropped = hub.pull_from_hub(
            repo_id, split=split, max_samples=max_samples, name=name,
            overwrite=overwrite, token=token,
        )
        return dataset, hub.PulledRepo(convert_pulled(dataset, repo_id, gt_field), dropped)

    release = _release_files(files)
    if not release:
        raise ImageNetXError(
            f"Hub repo '{repo_id}' is neither a FiftyOne dataset (no "
            "fiftyone.yml) nor the ImageNet-D release (no "
            "{background,texture,material}/<class folder>/<image> files): "
            f"load ImageNet-D from `hub='{RELEASE_REPO}'` or a local folder, `dir=...`"
        )
    prefix, paths = release
    # what the repo lacks, not what this (maybe partial) download lacks
    missing = tuple(
        k for k in NUISANCES if not any(p.startswith(f"{prefix}{k}/") for p in paths)
    )
    if max_samples:
        paths = paths[:max_samples]
    local = hub.download_files(repo_id, _patterns(paths, files), token=token)
    root, images, _ = find_release_images(os.path.join(local, prefix))
    # the download folder may hold files of earlier, larger downloads
    wanted = {os.path.join(local, p) for p in paths}
    images = [image for image in images if image[0] in wanted]
    dataset, summary = _build(name, overwrite, gt_field, root, images, missing)
    summary.source = f"the Hub repo '{repo_id}'"
    return dataset, summary


def _release_files(files: Sequence[str]):
    """``(prefix, sorted image paths)`` of a repo in the release layout
    (``[prefix]<nuisance>/<class folder>/<image>``), else None."""
    by_prefix: Dict[str, List[str]] = {}
    for f in files:
        parts = f.split("/")
        if len(parts) >= 3 and parts[-3] in NUISANCES and _is_image(f):
            prefix = "/".join(parts[:-3])
            by_prefix.setdefault(prefix + "/" if prefix else "", []).append(f)
    if not by_prefix:
        return None
    prefix = max(by_prefix, key=lambda p: len(by_prefix[p]))
    return prefix, sorted(by_prefix[prefix])


def _patterns(paths: List[str], files: Sequence[str]) -> List[str]:
    """Download patterns for ``paths``: a whole folder where all its images
    are wanted, else the files one by one."""
    wanted = set(paths)
    by_dir: Dict[str, List[str]] = {}
    for f in files:
        if _is_image(f):
            by_dir.setdefault(os.path.dirname(f), []).append(f)
    patterns = []
    for folder, members in sorted(by_dir.items()):
        chosen = [f for f in members if f in wanted]
        if chosen and len(chosen) == len(members):
            patterns.append(f"{folder}/*")
        else:
            patterns.extend(chosen)
    return patterns
