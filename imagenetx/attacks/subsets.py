"""RobustBench's fixed 5,000-image ImageNet subset, as a view: the ids
shipped with the package (:mod:`imagenetx.protocols.robustbench`), every
one required, each found once."""

from __future__ import annotations

from imagenetx.protocols.robustbench import SUBSET_SIZE, robustbench_names, select_subset
from imagenetx.store.datasets import get_dataset

__all__ = ["SUBSET_SIZE", "robustbench_names", "robustbench_view"]


def robustbench_view(samples):
    """The samples among RobustBench's 5,000 images (by val file name).

    Raises:
        ImageNetXError: when any of the 5,000 is missing, or a name is
            found more than once (see
            :func:`~imagenetx.protocols.robustbench.select_subset`)
    """
    view = get_dataset(samples)
    ids, paths = view.values(["id", "filepath"])
    chosen = select_subset(paths, view._dataset.name)
    return view.select([ids[k] for k in chosen], ordered=True)

