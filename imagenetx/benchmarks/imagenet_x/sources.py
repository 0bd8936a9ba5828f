"""Make FiftyOne datasets of ImageNet images and attach ImageNet-X to them.

-   :func:`load_imagenet_dir`: a local ImageNet folder, in either common
    layout (a flat validation folder, or one folder per WordNet id)
-   :func:`load_hub_dataset`: a dataset on the Hugging Face Hub: ImageNet's
    own shards, or a FiftyOne-format repo through FiftyOne's ``load_from_hub``

The first writes each sample once with its ImageNet-X fields (what
:func:`imagenetx.benchmarks.imagenet_x.tagging.tag_dataset` would add); the
second calls ``tag_dataset`` on the pulled dataset.
"""

import contextlib
import os
from dataclasses import dataclass

import fiftyone as fo

from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.benchmarks.imagenet_x.build import build_imagenet_dataset
from imagenetx.store.datasets import check_new_dataset_name
from imagenetx.errors import ImageNetXError
from imagenetx.memory import gc_paused
from imagenetx.classes.imagenet import class_table
from imagenetx.benchmarks.imagenet_x.tagging import (
    DEFAULT_GT_FIELD,
    TagSummary,
    tag_dataset,
)
from imagenetx.benchmarks.imagenet_d import loaders as imagenet_d
from imagenetx.benchmarks.imagenet_x.hub_pull import (
    PullProgress,
    check_pull_limits,
    media_repo,
    pull_imagenet,
    reattach_media,
    source_info,
)
from imagenetx.store import shards
from imagenetx.store.hub import PulledRepo, check_repo_id, pull_from_hub, repo_snapshot

IMAGE_EXTENSIONS = (".jpeg", ".jpg", ".png")


@dataclass
class LoadSummary:
    """What a loader found, and what tagging then did."""

    files_found: int
    annotations_missing_file: int
    tagging: TagSummary

    def __str__(self):
        return (
            f"{self.files_found:,} ImageNet files found; {self.tagging}; "
            f"{self.annotations_missing_file:,} ImageNet-X annotations of "
            "this split have no file here"
        )


def find_imagenet_files(imagenet_dir: str, split: str = "val") -> dict:
    """Finds the ImageNet images of a split in a folder.

    Accepts a flat folder of ``ILSVRC2012_val_XXXXXXXX.JPEG`` files, a
    folder with one sub-folder per WordNet id (``n01440764/...``, as
    torchvision's ``ImageFolder`` expects, for either split), or an ImageNet
    root holding ``val/`` and ``train/``.

    Returns:
        a dict mapping file name to ``(path, class index or None)``; the
        class comes from the WordNet id folder when there is one

    Raises:
        ImageNetXError: if the folder does not exist or holds no ImageNet
            file of the split
    """
    if split not in anno.SPLITS:
        raise ImageNetXError(
            f"Unknown split '{split}': use one of {', '.join(anno.SPLITS)}"
        )
    root = os.path.abspath(os.path.expanduser(imagenet_dir))
    if not os.path.isdir(root):
        raise ImageNetXError(
            f"ImageNet folder '{imagenet_dir}' does not exist: pass the "
            "folder that holds the ImageNet images"
        )
    if os.path.isdir(os.path.join(root, split)):
        root = os.path.join(root, split)

    wnid_index = {w: i for i, w in enumerate(class_table().wnids)}
    found = {}

    def scan(folder: str, klass, subfolders=None):
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir():
                    if subfolders is not None and not entry.is_symlink():
                        subfolders.append(entry)
                elif anno.split_of(entry.name) == split:
                    found[entry.name] = (entry.path, klass)

    # flat, or one level of class folders; like os.walk, links to folders
    # are not followed and folders that cannot be read are skipped
    subfolders = []
    scan(root, None, subfolders)
    for entry in subfolders:
        with contextlib.suppress(OSError):
            scan(entry.path, wnid_index.get(entry.name))

    if not found:
        example = (
            "ILSVRC2012_val_00000001.JPEG"
            if split == "val"
            else "n01440764/n01440764_10026.JPEG"
        )
        raise ImageNetXError(
            f"Folder '{imagenet_dir}' holds no ImageNet {split} images (file "
            f"names like {example}): pass the ImageNet {split} folder, or "
            f"`split='{'train' if split == 'val' else 'val'}'` if it holds the "
            "other split"
        )
    return found


def add_images(dataset: fo.Dataset, paths: list, metadata=None) -> list:
    """Adds one sample per image path, in bulk.

    Returns:
        the new sample ids, in the order of ``paths``
    """
    metadata = metadata or [None] * len(paths)
    samples = (
        fo.Sample(filepath=path, metadata=meta)
        for path, meta in zip(paths, metadata)
    )
    return dataset.add_samples(samples, num_samples=len(paths))


@gc_paused()
def load_imagenet_dir(
    imagenet_dir: str,
    split: str = "val",
    name: str = None,
    overwrite: bool = False,
    gt_field: str = DEFAULT_GT_FIELD,
):
    """Builds a dataset from a local ImageNet folder and tags it.

    Ground truth comes from the WordNet id folder when the layout has one,
    else from the file name (the official validation labels).

    Args:
        imagenet_dir: the folder (see :func:`find_imagenet_files`)
        split ("val"): ``"val"`` or ``"train"``
        name (None): the dataset name, ``imagenet-x-{split}`` by default
        overwrite (False): whether to replace an existing dataset
        gt_field ("ground_truth"): the ground truth field to write

    Returns:
        ``(dataset, LoadSummary)``
    """
    name = name or f"imagenet-x-{split}"
    check_new_dataset_name(name, overwrite)
    found = find_imagenet_files(imagenet_dir, split)

    file_names = sorted(found)
    classes = []
    for file_name in file_names:
        klass = found[file_name][1]
        classes.append(anno.class_of_file(file_name) if klass is None else klass)
    unknown = [f for f, c in zip(file_names, classes) if c is None]
    if unknown:
        raise ImageNetXError(
            f"{len(unknown)} files in '{imagenet_dir}' have no known ImageNet "
            f"class (e.g. {unknown[0]}): put training images in folders "
            "named by their WordNet id"
        )

    dataset, tagging = build_imagenet_dataset(
        name, {f: (found[f][0], c) for f, c in zip(file_names, classes)},
        split=split, overwrite=overwrite, gt_field=gt_field)
    annotated = anno.load_split(split).file_names
    missing = sum(1 for f in annotated if f not in found)
    return dataset, LoadSummary(len(found), missing, tagging)


def load_hub_dataset(
    repo_id: str,
    split: str = None,
    max_samples: int = None,
    name: str = None,
    overwrite: bool = False,
    gt_field: str = DEFAULT_GT_FIELD,
    token: str = None,
    workers: int = None,
    progress=None,
    revision: str = None,
    media_from: str = None,
):
    """Pulls a dataset from the Hugging Face Hub and tags it by file name.

    The repo's files say what it is:
    -   ImageNet itself, as parquet (``ILSVRC/imagenet-1k``) or webdataset
        (``timm/imagenet-1k-wds``) shards: see
        :func:`imagenetx.benchmarks.imagenet_x.hub_pull.pull_imagenet`
        (``split`` defaults to ``"val"``)
    -   a FiftyOne-format repo: FiftyOne's own
        ``fiftyone.utils.huggingface.load_from_hub``, then tagging; ImageNet-D
        repos (the name says so, or the loaded schema gives each image a
        background / texture / material nuisance) are converted to the
        ImageNet-D sample contract instead, see
        :mod:`imagenetx.benchmarks.imagenet_d`

    The token defaults to the ``HF_TOKEN`` environment variable.

    Args:
        repo_id: the Hub repo id, ``org/name``
        split (None): the split to load, where the repo has several
        max_samples (None): the most samples to load
        name (None): the dataset name (FiftyOne's default: the repo id;
            ``imagenet-x-{split}`` for ImageNet shards)
        overwrite (False): whether to replace an existing dataset
        gt_field ("ground_truth"): the ground truth field
        token (None): a Hugging Face token
        workers (None): ImageNet shards downloaded at once
        progress (None): called with a
            :class:`~imagenetx.benchmarks.imagenet_x.hub_pull.PullProgress`:
            first what the repo is, then as ImageNet shards finish
        revision (None): the branch, tag or commit to pull (default: the
            main branch); it is resolved to its commit once, at the start,
            and the dataset's info records it
        media_from (None): an ImageNet repo (``ILSVRC/imagenet-1k``) whose
            images replace the stand-ins of a pushed copy without its gated
            images, matched by file name (the summary says how many); where
            none matches, a new dataset is deleted and a replaced one kept
            with its stand-ins

    Returns:
        ``(dataset, summary)``: a :class:`PullSummary` for ImageNet shards;
        for a FiftyOne-format repo a :class:`~imagenetx.store.hub.PulledRepo`
        (the tagging's or ImageNet-D conversion's summary, and the samples
        dropped because their media lies outside the repo's download
        folder); an ``ImageNetDSummary`` for the ImageNet-D release repo;
        with ``media_from``, a :class:`MediaReattached` around it

    Raises:
        ImageNetXError: for a bad repo id, a layout it does not know, a
            refused token, any Hub error, or a FiftyOne-format repo none of
            whose samples' media is its own
    """

    check_repo_id(repo_id)
    check_pull_limits(max_samples, workers)  # for every layout: 0 saved an empty dataset
    if media_from is None:
        return _pull(repo_id, split, max_samples, name, overwrite, gt_field, token, workers,
                     progress, revision)
    media_repo(media_from, token)  # a media repo it cannot read is said before the pull
    dataset, summary = _pull(repo_id, split, max_samples, name, overwrite, gt_field, token,
                             workers, progress, revision)
    try:
        n = reattach_media(dataset, media_from, token=token, workers=workers,
                           progress=progress)
    except ImageNetXError as e:
        kept, pulled = overwrite, dataset.name  # it replaced a dataset: keep what was loaded
        if not kept:
            dataset.delete()  # a new dataset of stand-ins is not what was asked
        raise ImageNetXError(f"{e} (dataset '{pulled}' "
                             + ("kept with its stand-in images)" if kept else "not kept)")
                             ) from None
    return dataset, MediaReattached(summary, media_from, n, len(dataset))


@dataclass
class MediaReattached:
    """A pull whose stand-in images were re-attached to an ImageNet repo's."""

    pulled: object
    repo_id: str
    reattached: int
    samples: int

    def __getattr__(self, name):  # the pull's own figures (annotated, ...)
        if name == "pulled":
            raise AttributeError(name)
        return getattr(self.pulled, name)

    def __str__(self):
        left = self.samples - self.reattached
        return (f"{self.pulled}\n{self.reattached:,} of {self.samples:,} samples re-attached "
                f"to the images of '{self.repo_id}'"
                + (f"; {left:,} keep their stand-ins (not in that repo)" if left else ""))


def _pull(repo_id, split, max_samples, name, overwrite, gt_field, token, workers, progress,
          revision):
    """:func:`load_hub_dataset` without ``media_from``."""
    if imagenet_d.is_imagenet_d_repo(repo_id):
        if revision is not None:
            raise ImageNetXError("`revision` applies to ImageNet and FiftyOne-format repos, "
                                 f"not to the ImageNet-D repo '{repo_id}'")
        return imagenet_d.load_imagenet_d_hub(
            repo_id, split=split, max_samples=max_samples, name=name,
            overwrite=overwrite, gt_field=gt_field, token=token,
        )
    snapshot = repo_snapshot(repo_id, revision, token)  # one commit for the whole pull
    layout = shards.repo_layout(repo_id, snapshot.paths)
    if layout != shards.FIFTYONE:
        return pull_imagenet(
            snapshot, layout, split=split or "val", max_samples=max_samples,
            name=name, overwrite=overwrite, gt_field=gt_field, token=token,
            workers=workers, progress=progress)
    if progress is not None:
        progress(PullProgress(0, 1, 0, 0.0, f"'{repo_id}' at revision "
                              f"{snapshot.revision[:12]} is {shards.LAYOUT_TITLES[layout]}"))
    dataset, dropped = pull_from_hub(
        repo_id, split=split, max_samples=max_samples, name=name,
        overwrite=overwrite, token=token, revision=snapshot.revision,
    )
    if imagenet_d.looks_like_imagenet_d(dataset):
        summary = imagenet_d.convert_pulled(dataset, repo_id, gt_field)
    else:
        summary = tag_dataset(dataset, gt_field=gt_field)
    info = dict(dataset.info.get("imagenetx") or {})
    # not "source": that marks images pulled from a gated ImageNet repo
    info["pulled_from"] = source_info(snapshot, split, layout)
    dataset.info["imagenetx"] = info
    dataset.save()
    return dataset, PulledRepo(summary, dropped)
