"""OpenOOD v1.5's ImageNet-1K benchmark as its image lists say it.

The lists (``benchmark_imglist/imagenet/*.txt``, one ``<path> <label>`` a
line, label -1 for OOD) are read through
:class:`~imagenetx.store.downloads.RemoteFiles`: a local copy named by
``lists_dir`` or ``$IMAGENETX_OPENOOD_DIR``, else downloaded once into the
cache from facebookresearch/UnifiedUncertaintyCalibration, which
redistributes OpenOOD's lists (OpenOOD itself ships them as a Google Drive
archive). The images are the user's, under OpenOOD's data folder:
``images_classic/`` for Textures, ``images_largescale/`` for the rest
(``openood/evaluation_api/datasets.py``).
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from imagenetx.benchmarks.ood_detection.contract import FAR, ID, IMAGENET_VAL, NEAR
from imagenetx.errors import ImageNetXError
from imagenetx.store.downloads import RemoteFiles

#: the lists: OpenOOD's, as redistributed at a pinned commit
OPENOOD_LISTS = RemoteFiles(
    name="OpenOOD v1.5 image lists",
    base_url=("https://raw.githubusercontent.com/facebookresearch/UnifiedUncertaintyCalibration/"
              "67189131ba897e9482df88bddeffbef4bc8db807/benchmark_imglist"),
    override_env="IMAGENETX_OPENOOD_DIR",
    cache_subdir="openood",
    option="lists_dir",
)


@dataclass(frozen=True)
class OpenOODSet:
    """One list of the benchmark.

    Attributes:
        source: its ``ood_source`` (``imagenet_val`` for the ID list)
        role: its ``ood_role``: ``id``, ``near`` or ``far``
        list_path: the list, relative to ``benchmark_imglist/``
        root: the folder of OpenOOD's data folder its paths start in
    """

    source: str
    role: str
    list_path: str
    root: str = "images_largescale"


#: each split's lists, the ID list first (``openood/evaluation_api/datasets.py``)
SPLITS: Dict[str, Tuple[OpenOODSet, ...]] = {
    "test": (
        OpenOODSet(IMAGENET_VAL, ID, "imagenet/test_imagenet.txt"),
        OpenOODSet("ssb_hard", NEAR, "imagenet/test_ssb_hard.txt"),
        OpenOODSet("ninco", NEAR, "imagenet/test_ninco.txt"),
        OpenOODSet("inaturalist", FAR, "imagenet/test_inaturalist.txt"),
        OpenOODSet("textures", FAR, "imagenet/test_textures.txt", "images_classic"),
        OpenOODSet("openimage_o", FAR, "imagenet/test_openimage_o.txt"),
    ),
    "val": (
        OpenOODSet(IMAGENET_VAL, ID, "imagenet/val_imagenet.txt"),
        OpenOODSet("openimage_o", FAR, "imagenet/val_openimage_o.txt"),
    ),
}


def split_sets(split: str, sets: Optional[str] = None) -> Tuple[OpenOODSet, ...]:
    """The ID list and the OOD lists ``sets`` names (comma-separated; None:
    all) of a split.

    Raises:
        ImageNetXError: for an unknown split or set
    """
    if split not in SPLITS:
        raise ImageNetXError(f"OpenOOD has no split '{split}': use one of {', '.join(SPLITS)}")
    id_set, *ood = SPLITS[split]
    if sets is None:
        return (id_set, *ood)
    wanted = [s.strip() for s in sets.split(",") if s.strip()]
    known = {s.source: s for s in ood}
    unknown = [s for s in wanted if s not in known]
    if unknown or not wanted:
        raise ImageNetXError(
            f"OpenOOD's {split} split has no OOD set '{(unknown or [''])[0]}': pass `sets` "
            f"as some of {', '.join(known)}, comma-separated")
    return (id_set, *(known[s] for s in known if s in wanted))


def read_list(path: Path) -> List[Tuple[str, int]]:
    """``(relative path, label)`` per line of an OpenOOD list.

    Raises:
        ImageNetXError: for a line that is not ``<path> <label>``
    """
    out = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            rel, _, label = line.rstrip("\n").rpartition(" ")
            try:
                out.append((rel, int(label)))
            except ValueError:
                raise ImageNetXError(
                    f"OpenOOD list '{path}' line {number} is not '<path> <label>': "
                    f"{line.strip()[:80]!r}; point `lists_dir` at an unchanged copy") from None
            if not rel:
                raise ImageNetXError(
                    f"OpenOOD list '{path}' line {number} names no image: point "
                    "`lists_dir` at an unchanged copy")
    return out


def read_lists(sets, lists_dir: Optional[str] = None) -> Dict[str, List[Tuple[str, int]]]:
    """Each set's lines, by source (the lists from ``lists_dir``,
    ``$IMAGENETX_OPENOOD_DIR`` or the download cache)."""
    paths = OPENOOD_LISTS.paths([s.list_path for s in sets], lists_dir, progress=False)
    return {s.source: read_list(p) for s, p in zip(sets, paths)}


def set_root(folder: Path, item: OpenOODSet, first: str) -> Optional[Path]:
    """Where a set's paths start: ``folder/<root>`` or ``folder`` itself,
    whichever holds the list's first folder (``imagenet_1k``, ``texture``);
    None when neither does."""
    top = first.split("/", 1)[0]
    for root in (folder / item.root, folder):
        if (root / top).is_dir():
            return root
    return None
