"""Corruption errors (CE, mCE, relative mCE) of a prediction field on a
released ImageNet-C dataset (:mod:`imagenetx.benchmarks.ood`).

Corruptions made on the fly have theirs in the probe results
(:mod:`imagenetx.analysis.probes`); both end in
:func:`imagenetx.metrics.corruption.corruption_errors`.
"""

import math
from typing import Optional

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.corruption import (
    ALEXNET_ERRORS,
    SEVERITIES,
    CorruptionErrors,
    corruption_errors,
)


def imagenet_c_errors(samples, field: str, clean_dataset: Optional[str] = None,
                      clean_accuracy: Optional[float] = None,
                      gt_field: str = "ground_truth") -> CorruptionErrors:
    """Top-1 error per corruption and severity of ``field`` on an ImageNet-C
    dataset, with CE per corruption and mCE against AlexNet's published
    errors; relative CE and mCE when the clean error is known.

    Args:
        samples: an ImageNet-C dataset, view or dataset name
        field: the prediction field
        clean_dataset (None): a dataset of the clean images (ImageNet val)
            whose ``field`` gives the clean accuracy
        clean_accuracy (None): the clean top-1 accuracy, as a fraction
        gt_field ("ground_truth"): the ground truth field

    Raises:
        ImageNetXError: for a dataset that is not ImageNet-C, both clean
            sources, or a clean accuracy outside [0, 1]
    """
    from imagenetx.analysis.engine import compute_ratios
    from imagenetx.benchmarks import get_benchmark
    from imagenetx.store.datasets import get_dataset

    samples = get_dataset(samples)
    if get_benchmark(samples).name != "imagenet_c":
        raise ImageNetXError(
            f"Dataset '{samples._dataset.name}' is not ImageNet-C: load the released "
            "folders with `imagenetx load --imagenet-c-dir DIR`, or measure corruptions "
            "on the fly with `imagenetx predict --corruptions all`")
    if clean_dataset is not None and clean_accuracy is not None:
        raise ImageNetXError("Give the clean accuracy or a clean dataset, not both")
    if clean_accuracy is not None and not 0 <= clean_accuracy <= 1:
        raise ImageNetXError(
            f"Clean accuracy {clean_accuracy} is not a fraction in [0, 1], e.g. 0.76")
    if clean_dataset is not None:
        clean_view, settings = get_dataset(clean_dataset), {}
        if get_benchmark(clean_view).name == "imagenet_x":
            # all of ImageNet val the dataset has, prototypes included
            clean_view = clean_view.match({"imagenetx.split": "val"})
            settings["include_prototypes"] = True
        clean = compute_ratios(clean_view, [field], intervals=False, gt_field=gt_field,
                               **settings)
        clean_accuracy = clean.models[field].accuracy

    result = compute_ratios(samples, [field], intervals=False, gt_field=gt_field,
                            slicing="corruption", by="severity")
    groups = result.models[field].groups or {}
    cells = {}
    for severity, group in groups.items():
        for corruption, stats in group.slices.items():
            if stats.n:
                cells[(corruption, int(severity))] = 1 - stats.accuracy
    names = [c for c in ALEXNET_ERRORS if any((c, s) in cells for s in SEVERITIES)]
    if not names:
        raise ImageNetXError(
            f"No images of the 15 ImageNet-C corruptions with predictions '{field}' "
            f"in '{samples._dataset.name}'")
    errors = np.array([[cells.get((c, s), math.nan) for s in SEVERITIES] for c in names])
    clean_error = math.nan if clean_accuracy is None else 1 - clean_accuracy
    return corruption_errors(errors, clean_error, names)
