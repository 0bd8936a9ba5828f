"""RobustBench's 5,000 ImageNet validation images, shipped with the package
(``data/robustbench/imagenet_test_image_ids.txt``, RobustBench's own file,
MIT), and the rule that picks them out of a dataset: every one of the 5,000
found exactly once, by validation file name."""

from __future__ import annotations

import os
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import List, Sequence, Tuple

from imagenetx.errors import ImageNetXError

#: the ids file, as RobustBench ships it
IDS_FILE = Path(__file__).parent / "data" / "robustbench" / "imagenet_test_image_ids.txt"
SUBSET_SIZE = 5000


@lru_cache(maxsize=1)
def robustbench_ids() -> Tuple[str, ...]:
    """RobustBench's ``<wnid>/<val file name>`` ids, in its order."""
    with open(IDS_FILE, encoding="utf-8") as f:
        return tuple(line.strip() for line in f if line.strip())


def robustbench_names() -> frozenset:
    """The val file names of the 5,000 images."""
    return frozenset(os.path.basename(i) for i in robustbench_ids())


def select_subset(paths: Sequence[str], dataset: str) -> List[int]:
    """The positions of RobustBench's images among ``paths``.

    Raises:
        ImageNetXError: when a name of the subset is found more than once
            (a dataset that reuses val file names, such as ImageNet-C's
            corruption folders), or when any of the 5,000 is missing
    """
    names = robustbench_names()
    found = [k for k, p in enumerate(paths) if os.path.basename(p) in names]
    counts = Counter(os.path.basename(paths[k]) for k in found)
    repeated = [n for n, c in counts.items() if c > 1]
    if repeated:
        copies = [paths[k] for k in found if os.path.basename(paths[k]) == repeated[0]]
        raise ImageNetXError(
            f"Dataset '{dataset}' holds {len(repeated):,} of RobustBench's ImageNet "
            f"validation file names more than once (e.g. {repeated[0]} at {copies[0]} and "
            f"{copies[1]}): its images reuse val file names (ImageNet-C's corruption "
            "folders), so RobustBench's subset is not defined on it; pass a view with one "
            "copy of each, or --protocol none to attack the images as they are")
    if len(counts) < SUBSET_SIZE:
        raise ImageNetXError(
            f"Dataset '{dataset}' holds {len(counts):,} of RobustBench's {SUBSET_SIZE:,} "
            f"ImageNet validation images ({SUBSET_SIZE - len(counts):,} missing, matched by "
            "file name): the robustbench protocol needs all of them, so load the whole "
            "validation set (imagenetx load --imagenet-dir DIR), or pass --protocol none "
            "--attack autoattack --eps 4/255 to attack the images it has")
    return found
