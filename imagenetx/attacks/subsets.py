"""RobustBench's fixed 5,000-image ImageNet subset, as a view.

The list is RobustBench's ``helper_files/imagenet_test_image_ids.txt``
(``<wnid>/<val file name>`` per line), downloaded once into the cache
(``$IMAGENETX_ROBUSTBENCH_DIR`` points at a local copy instead).
"""

from __future__ import annotations

import os
from typing import Optional

from imagenetx.errors import ImageNetXError
from imagenetx.store.downloads import RemoteFiles

IDS_FILE = "imagenet_test_image_ids.txt"
SUBSET_SIZE = 5000

FILES = RemoteFiles(
    name="RobustBench ImageNet subset list",
    base_url="https://raw.githubusercontent.com/RobustBench/robustbench/master/"
             "robustbench/helper_files",
    override_env="IMAGENETX_ROBUSTBENCH_DIR",
    cache_subdir="robustbench",
    option="$IMAGENETX_ROBUSTBENCH_DIR",
)


def robustbench_names() -> set:
    """The file names of RobustBench's 5,000 ImageNet validation images."""
    with open(FILES.path(IDS_FILE), encoding="utf-8") as f:
        return {os.path.basename(line.strip()) for line in f if line.strip()}


def robustbench_view(samples):
    """The samples among RobustBench's 5,000 images (by file name).

    Raises:
        ImageNetXError: when the dataset holds none of them
    """
    from imagenetx.store.datasets import get_dataset

    view = get_dataset(samples)
    names = robustbench_names()
    ids = [i for i, p in zip(*view.values(["id", "filepath"])) if os.path.basename(p) in names]
    if not ids:
        raise ImageNetXError(
            f"Dataset '{view._dataset.name}' holds none of RobustBench's {SUBSET_SIZE:,} "
            "ImageNet validation images (matched by file name): load the validation set, "
            "or pass --attack autoattack --eps 4/255 to attack this dataset as it is")
    return view.select(ids, ordered=True)


def protocol_view(samples, protocol: Optional[str]):
    """The samples a protocol attacks: RobustBench's subset for
    ``robustbench`` (whatever settings were changed on top of it), else
    ``samples`` as they are."""
    return robustbench_view(samples) if protocol == "robustbench" else samples
