"""Where a dataset's media files are, and which lie outside given folders.

A sample names files in its ``filepath``, in the App's other media fields
(``app_config.media_fields``) and in its heatmaps' ``map_path`` and masks'
``mask_path``: the files FiftyOne's ``push_to_hub`` uploads and its
``load_from_hub`` downloads. A Hub repo that names files outside its own
download folder (``/etc/passwd``, ``../../..`` escapes) would otherwise make
a dataset whose next push uploads them.
"""

import os
from typing import Dict, Iterable, List, Sequence, Tuple

import fiftyone as fo

from imagenetx.store.datasets import all_slices

#: outside files named in a message
EXAMPLES_SHOWN = 3


def media_path_fields(samples) -> List[str]:
    """The sample fields that hold file paths: ``filepath``, the App's media
    fields, and the ``map_path`` / ``mask_path`` of top-level heatmap and
    segmentation fields (as FiftyOne's Hub utilities read them)."""
    dataset = samples._dataset
    fields = list(dict.fromkeys(["filepath", *dataset.app_config.media_fields]))
    for doc_type, attr in ((fo.Heatmap, "map_path"), (fo.Segmentation, "mask_path")):
        for name in samples.get_field_schema(embedded_doc_type=doc_type):
            fields.append(f"{name}.{attr}")
    return fields


def sample_media(samples, skip: Sequence[str] = ()) -> List[Tuple[str, str]]:
    """``(sample id, path)`` of every file the samples name (all group
    slices) in :func:`media_path_fields` other than ``skip``, read in one
    ``values()`` call."""
    samples = all_slices(samples)
    fields = [f for f in media_path_fields(samples) if f not in skip]
    columns = samples.values(["id", *fields])
    out = []
    for values in columns[1:]:
        out.extend((i, p) for i, p in zip(columns[0], values) if p)
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


def examples(paths: Sequence[str]) -> str:
    """``/etc/passwd, /etc/hostname and 3 more``."""
    unique = list(dict.fromkeys(paths))
    shown = ", ".join(unique[:EXAMPLES_SHOWN])
    more = len(unique) - EXAMPLES_SHOWN
    return shown + (f" and {more:,} more" if more > 0 else "")
