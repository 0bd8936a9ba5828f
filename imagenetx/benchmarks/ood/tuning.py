"""Datasets nothing may be trained or tuned on.

ObjectNet's licence allows it as a test set only: no training and no tuning
on its images, a temperature included. Its loader writes the reason into
``dataset.info["imagenetx"]["no_tuning"]``; code that fits anything on a
dataset's labels (temperature scaling,
:func:`imagenetx.metrics.temperature.fit_temperature`, is fitted on held-out
clean ImageNet images) calls :func:`check_tunable` on the dataset first::

    from imagenetx.benchmarks.ood.tuning import check_tunable

    check_tunable(fit_dataset, "fit a temperature")   # raises on ObjectNet
"""

from typing import Optional

from imagenetx.benchmarks.ood.layouts import LAYOUTS
from imagenetx.errors import ImageNetXError
from imagenetx.store.datasets import get_dataset

#: the ``dataset.info["imagenetx"]`` key of the reason
NO_TUNING = "no_tuning"


def refuses_tuning(samples) -> Optional[str]:
    """Why nothing may be trained or tuned on a dataset (its licence), or
    None where nothing says so.

    Args:
        samples: a dataset, a view of one, or a dataset name

    The reason is the one its loader recorded in ``dataset.info``, else
    its benchmark's (a dataset marked as ObjectNet by hand).
    """
    info = get_dataset(samples)._dataset.info.get("imagenetx") or {}
    if not isinstance(info, dict):
        return None
    if info.get(NO_TUNING):
        return str(info[NO_TUNING])
    layout = next((lay for lay in LAYOUTS.values() if lay.benchmark == info.get("benchmark")),
                  None)
    return (layout.no_tuning or None) if layout else None


def check_tunable(samples, what: str = "fit a temperature") -> None:
    """Refuses a dataset nothing may be tuned on, in one line.

    Args:
        samples: a dataset, a view of one, or a dataset name
        what ("fit a temperature"): what was to be fitted, for the message

    Raises:
        ImageNetXError: where :func:`refuses_tuning` gives a reason
    """
    reason = refuses_tuning(samples)
    if reason:
        name = get_dataset(samples)._dataset.name
        raise ImageNetXError(
            f"Dataset '{name}' cannot be used to {what}: {reason}; fit on held-out clean "
            "ImageNet val images instead and apply the result to it")
