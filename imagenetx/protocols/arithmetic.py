"""The arithmetic of published columns that is not the plain ratio.

Gavrikov & Keuper's ``run_foolbox_attack`` (``code/eval_imagenet_adv.py``)
counts images with ``pos += batch_size`` per batch and reports
``1 - perturbed / pos``: the last, partial batch counts as a full one. On
ImageNet val (50,000 images, batch size 128, 391 batches) the denominator
is 50,048 and the 48 padding images count as robust, so every published
``PGD-40`` value is ``(robust + 48) / 50048``, never ``robust / 50000``.
"""

from __future__ import annotations

import math


def padded_batches(n: int, batch_size: int) -> int:
    """The images a loop that counts whole batches believes it saw:
    ``ceil(n / batch_size) * batch_size``."""
    return math.ceil(n / batch_size) * batch_size if n else 0


def padded_batch_accuracy(correct: int, n: int, batch_size: int) -> float:
    """``1 - wrong / padded``, as a loop that counts the last partial batch
    as a full one reports accuracy: ``(correct + pad) / (n + pad)``.

    Args:
        correct: images right (robust) of ``n``
        n: images evaluated
        batch_size: the loop's batch size
    """
    padded = padded_batches(n, batch_size)
    if not padded:
        return math.nan
    return 1.0 - (n - correct) / padded
