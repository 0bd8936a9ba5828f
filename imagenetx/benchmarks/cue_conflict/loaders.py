"""Load the 1,280 texture-shape cue-conflict stimuli onto FiftyOne.

Geirhos et al. (ICLR 2019) style-transferred the texture of one image onto
the shape of another, across 16 entry-level categories. The public release
(rgeirhos/texture-vs-shape ``stimuli/style-transfer-preprocessed-512``) is
``<shape>/<shape><i>-<texture><j>.png``.

Sample contract:

-   ``ground_truth``: ``fo.Classification`` with ``label`` the shape
    category and ``class_index`` its index among the 16 (alphabetical)
-   ``shape``, ``texture``: str, the two categories
-   ``texture_index``: int, the texture category's index among the 16
-   ``cue_conflict``: bool, whether shape and texture differ (the 1,200
    images shape bias is measured on; the other 80 carry one cue twice)
-   ``dataset.info["imagenetx"]["benchmark"] == "cue_conflict"``
"""

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

import fiftyone as fo

from imagenetx.classes.cue_conflict import categories, category_index, stimulus_files
from imagenetx.errors import ImageNetXError
from imagenetx.benchmarks.cue_conflict.benchmark import CueConflict
from imagenetx.benchmarks.scenarios import FieldNames
from imagenetx.store.datasets import check_new_dataset_name, mark_benchmark
from imagenetx.store.ingest import insert_samples, new_dataset
from imagenetx.store.downloads import RemoteFiles
from imagenetx.store.schema import declare_classification, raw_classification

BENCHMARK = "cue_conflict"
DEFAULT_NAME = "cue-conflict"
NUM_STIMULI = 1280

#: the public release, pinned to the commit the packaged file list is from
STIMULI = RemoteFiles(
    name="cue-conflict stimuli",
    option="dir",
    base_url="https://raw.githubusercontent.com/rgeirhos/texture-vs-shape/"
             "ef10e3ed6e41da1af0f0f8e0dfcea40ed838ee25/stimuli/"
             "style-transfer-preprocessed-512",
    override_env="IMAGENETX_CUE_CONFLICT_DIR",
    cache_subdir="cue-conflict/style-transfer-preprocessed-512",
)

_NAME_RE = re.compile(r"^([a-z]+)(\d+)-([a-z]+)(\d+)\.png$")


@dataclass(frozen=True)
class Stimulus:
    """One cue-conflict image."""

    path: str
    shape: str
    texture: str

    @property
    def conflict(self) -> bool:
        return self.shape != self.texture


@dataclass
class CueConflictSummary:
    """What a load built."""

    dataset: str
    source: str
    samples: int
    conflict: int

    def __str__(self):
        return (f"Dataset '{self.dataset}': {self.samples:,} cue-conflict "
                f"stimuli from {self.source}, {self.conflict:,} with shape "
                f"and texture of different categories "
                f"({self.samples - self.conflict:,} with one cue twice)")


def parse_stimulus_name(name: str) -> Optional[Tuple[str, str]]:
    """``(shape, texture)`` of ``<shape><i>-<texture><j>.png``, else None."""
    m = _NAME_RE.match(name)
    if m is None or m.group(1) not in categories() or m.group(3) not in categories():
        return None
    return m.group(1), m.group(3)


def find_stimuli(folder) -> List[Stimulus]:
    """The stimuli of a folder laid out as the release.

    Raises:
        ImageNetXError: for a folder that is not cue-conflict shaped: no
            category folders, or files whose name or folder does not fit
    """
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise ImageNetXError(f"Cue-conflict folder '{folder}' does not exist")
    found, bad = [], []
    for entry in sorted(os.listdir(root)):
        sub = root / entry
        if not sub.is_dir():
            continue
        if entry not in categories():
            bad.append(f"{entry}/ (not one of the 16 categories)")
            continue
        for name in sorted(os.listdir(sub)):
            cues = parse_stimulus_name(name)
            if cues is None or cues[0] != entry:
                bad.append(f"{entry}/{name}")
                continue
            found.append(Stimulus(str(sub / name), *cues))
    if bad or not found:
        what = (f"{len(bad):,} entries do not fit, e.g. {', '.join(bad[:3])}"
                if bad else "it has no category folders with images")
        raise ImageNetXError(
            f"'{folder}' is not a cue-conflict folder: {what}. Expected "
            "<category>/<shape><i>-<texture><j>.png for the 16 categories "
            f"({', '.join(categories())}), as in {STIMULI.base_url}")
    return found


def load_cue_conflict(
    folder: Optional[str] = None,
    name: Optional[str] = None,
    overwrite: bool = False,
    gt_field: str = "ground_truth",
    progress=None,
) -> Tuple[fo.Dataset, CueConflictSummary]:
    """Builds a dataset of the cue-conflict stimuli.

    Args:
        folder (None): a local copy laid out as the release; None: the
            ``IMAGENETX_CUE_CONFLICT_DIR`` folder if set, else the public
            release, downloaded once into the cache
            (``$IMAGENETX_CACHE_DIR``)
        name (None): the dataset name, ``cue-conflict`` by default
        overwrite (False): whether to replace an existing dataset
        gt_field ("ground_truth"): the ground truth field to write
        progress (None): the download's progress bar (see
            ``fiftyone.core.utils.ProgressBar``)

    Returns:
        ``(dataset, CueConflictSummary)``

    Raises:
        ImageNetXError: before anything is written, for a bad folder, a
            failed download, or an existing name without ``overwrite``
    """
    name = name or DEFAULT_NAME
    check_new_dataset_name(name, overwrite)
    local = STIMULI.local_dir(folder)
    if local is None:
        STIMULI.paths(stimulus_files(), progress=progress)
        local = STIMULI.cache_dir()
    stimuli = find_stimuli(local)

    with new_dataset(name, overwrite) as dataset:
        declare_classification(dataset, gt_field)
        for field, ftype in (("shape", fo.StringField), ("texture", fo.StringField),
                             ("texture_index", fo.IntField),
                             ("cue_conflict", fo.BooleanField)):
            dataset.add_sample_field(field, ftype)
        insert_samples(dataset, (
            {
                "filepath": s.path,
                gt_field: raw_classification(s.shape, category_index(s.shape)),
                "shape": s.shape,
                "texture": s.texture,
                "texture_index": category_index(s.texture),
                "cue_conflict": s.conflict,
            }
            for s in stimuli
        ))
        mark_benchmark(dataset, BENCHMARK)
        CueConflict().tagged(dataset, FieldNames(gt_field=gt_field))
    conflict = sum(s.conflict for s in stimuli)
    return dataset, CueConflictSummary(dataset.name, str(local), len(stimuli), conflict)

