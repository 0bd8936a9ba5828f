"""Where a dataset's media files are, and which lie outside given folders.

A sample names files in its ``filepath``, in the App's other media fields
(``app_config.media_fields``), in the media path of any label at any depth
(a detection's ``mask_path``, a nested segmentation or heatmap), in its
frames' labels and in the assets of its ``.fo3d`` scenes: the files
FiftyOne's exporter, and so ``push_to_hub``, uploads. A Hub repo that names files outside its own
download folder (``/etc/passwd``, ``../../..`` escapes) would otherwise make
a dataset whose next push uploads them.
"""

import os
import tempfile
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import fiftyone.core.threed as fo3d

from imagenetx.store.datasets import all_slices

#: outside files named in a message
EXAMPLES_SHOWN = 3
#: folders of the system, whose files a push uploads only from a folder
#: named at or below them (confirming the folders a plan shows, or naming
#: ``/``, does not cover them)
SYSTEM_FOLDERS = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
                  "/proc", "/root", "/run", "/sbin", "/sys", "/usr", "/var")


def media_path_fields(samples, frames: bool = False) -> List[str]:
    """The fields that hold file paths, at any depth, as FiftyOne's exporter
    (which ``push_to_hub`` uses) finds them: ``filepath``, the App's media
    fields and the media path of every label that has one (a detection's
    ``mask_path``, a segmentation or heatmap inside a list or an embedded
    document). With ``frames``, the frame-level fields (without the
    ``frames.`` prefix)."""
    fields = samples._get_media_fields(blacklist="media_reference", frames=frames)
    return [root if leaf is None else f"{root}.{leaf}" for root, leaf in fields.items()]


def _flat(values) -> Iterable:
    """The leaves of ``values()``'s nested lists (one level per list field)."""
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        elif v:
            yield v


def scene_assets(path: str) -> List[str]:
    """The absolute paths of the assets a ``.fo3d`` scene names (relative
    ones taken from the scene's folder, as FiftyOne's exporter does); none
    when the scene cannot be read (the exporter then fails on it itself)."""
    try:
        assets = fo3d.Scene.from_fo3d(path).get_asset_paths()
    except Exception:  # a missing or malformed scene names no asset
        return []
    folder = os.path.dirname(path)
    return [os.path.abspath(os.path.join(folder, a)) for a in assets if a]


def sample_media(samples, skip: Sequence[str] = ()) -> List[Tuple[str, str]]:
    """``(sample id, path)`` of every file the samples name (all group
    slices, frame labels of videos, the assets of ``.fo3d`` scenes) in
    :func:`media_path_fields` other than ``skip``, read in one ``values()``
    call per level."""
    samples = all_slices(samples)
    fields = [f for f in media_path_fields(samples) if f not in skip]
    if samples._contains_videos(any_slice=True):
        fields += ["frames." + f for f in media_path_fields(samples, frames=True)]
    columns = samples.values(["id", *fields])
    out = []
    for values in columns[1:]:
        for i, v in zip(columns[0], values):
            out.extend((i, p) for p in _flat([v]))
    out.extend((i, a) for i, p in list(out) if p.endswith(".fo3d") for a in scene_assets(p))
    return out


class Folders:
    """Whether paths lie inside some folders, symbolic links in the folders'
    and the paths' parent folders resolved (a file name itself is taken as
    written: huggingface_hub may link a downloaded file into its cache)."""

    def __init__(self, folders: Iterable[str]):
        self.folders = [os.path.join(os.path.realpath(f), "") for f in folders]
        self._parents: Dict[str, str] = {}

    def __contains__(self, path: str) -> bool:
        parent, name = os.path.split(os.path.abspath(path))
        real = self._parents.get(parent)
        if real is None:
            real = self._parents[parent] = os.path.realpath(parent)
        full = os.path.join(real, name)
        return any(full.startswith(f) for f in self.folders)


def outside(media: Sequence[Tuple[str, str]], folders: Iterable[str]) -> List[Tuple[str, str]]:
    """The ``(sample id, path)`` pairs whose path lies in none of ``folders``."""
    inside = Folders(folders)
    return [(i, p) for i, p in media if p not in inside]


def system_folder(path: str) -> Optional[str]:
    """The system folder (:data:`SYSTEM_FOLDERS`) ``path`` lies in, its
    symbolic links resolved, or None; the user's home and the temporary
    folder are no system folder wherever they are (a home of ``/root``)."""
    real = os.path.realpath(os.path.expanduser(path))
    for own in (os.path.expanduser("~"), tempfile.gettempdir()):
        own = os.path.realpath(own)
        if real == own or real.startswith(os.path.join(own, "")):
            return None
    return next((f for f in SYSTEM_FOLDERS
                 if real == f or real.startswith(f + os.sep)), None)


def examples(paths: Sequence[str]) -> str:
    """``/etc/passwd, /etc/hostname and 3 more``."""
    unique = list(dict.fromkeys(paths))
    shown = ", ".join(unique[:EXAMPLES_SHOWN])
    more = len(unique) - EXAMPLES_SHOWN
    return shown + (f" and {more:,} more" if more > 0 else "")
