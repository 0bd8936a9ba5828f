"""Corruption error (Hendrycks & Dietterich, ICLR 2019) from plain arrays.

``CE_c = sum_s E(c, s) / sum_s E_AlexNet(c, s)``, mCE its mean over the
corruptions, and the relative CE
``sum_s (E(c, s) - E_clean) / sum_s (E_AlexNet(c, s) - E_AlexNet_clean)``.
AlexNet's errors, averaged over the five severities, are the table the
authors normalize by in their own code (google-research/augmix
``imagenet.py``, ``ALEXNET_ERR``, "Raw AlexNet errors taken from
https://github.com/hendrycks/robustness"); AlexNet's clean error is
1 - 0.56522, the top-1 accuracy torchvision publishes for the AlexNet
weights that the authors' ``ImageNet-C/test.py`` evaluates.

Works the same on a model's predictions under corruptions made on the fly
and on the released ImageNet-C folders. :func:`corruption_accuracy` is the
plain accuracy table (top-1, top-5, their unweighted mean over the
corruption x severity cells) that Gavrikov & Keuper report for ImageNet-C
(19 corruptions) and ImageNet-C-bar (10).
"""

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from imagenetx.errors import ImageNetXError

#: the 15 ImageNet-C corruptions, in the authors' order
CORRUPTIONS = (
    "gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur",
    "glass_blur", "motion_blur", "zoom_blur", "snow", "frost", "fog",
    "brightness", "contrast", "elastic_transform", "pixelate",
    "jpeg_compression",
)
SEVERITIES = (1, 2, 3, 4, 5)

#: AlexNet's error per corruption, mean over the 5 severities
#: (google-research/augmix imagenet.py, ALEXNET_ERR)
ALEXNET_ERRORS: Dict[str, float] = dict(zip(CORRUPTIONS, (
    0.886428, 0.894468, 0.922640, 0.819880, 0.826268, 0.785948, 0.798360,
    0.866816, 0.826572, 0.819324, 0.564592, 0.853204, 0.646056, 0.717840,
    0.606500)))
#: AlexNet's clean top-1 error (torchvision: acc@1 56.522)
ALEXNET_CLEAN_ERROR = 1 - 0.56522


@dataclass(frozen=True)
class CorruptionErrors:
    """Errors and corruption errors of one model.

    Attributes:
        corruptions: the corruption names, rows of ``errors``
        errors: ``(corruptions, 5)`` top-1 error per severity, NaN where
            not measured
        clean_error: the clean top-1 error
        ce: CE per corruption (NaN unless all 5 severities are measured)
        relative_ce: relative CE per corruption
        accuracy (None): the accuracy table over every corruption the
            dataset has (released ImageNet-C: the 15 and the 4 extra), whose
            ``mean_top1`` is Gavrikov & Keuper's ImageNet-C accuracy
    """

    corruptions: tuple
    errors: np.ndarray
    clean_error: float
    ce: np.ndarray
    relative_ce: np.ndarray
    accuracy: Optional["CorruptionAccuracy"] = None

    @property
    def complete(self) -> List[str]:
        """The corruptions with all 5 severities measured."""
        return [c for c, v in zip(self.corruptions, self.ce) if np.isfinite(v)]

    @property
    def mce(self) -> float:
        """Mean CE over the complete corruptions (NaN if none)."""
        finite = self.ce[np.isfinite(self.ce)]
        return float(finite.mean()) if finite.size else float("nan")

    @property
    def relative_mce(self) -> float:
        finite = self.relative_ce[np.isfinite(self.relative_ce)]
        return float(finite.mean()) if finite.size else float("nan")

    def to_dict(self) -> dict:
        """JSON-ready; NaN becomes None."""
        def num(x):
            return float(x) if np.isfinite(x) else None

        out = {
            "clean_error": num(self.clean_error),
            "mce": num(self.mce),
            "relative_mce": num(self.relative_mce),
            "mce_over": self.complete,
            "all_15": len(self.complete) == len(CORRUPTIONS),
            "corruptions": {
                c: {"errors": {str(s): num(e) for s, e in zip(SEVERITIES, row)},
                    "mean_error": num(np.nanmean(row)) if np.isfinite(row).any() else None,
                    "ce": num(ce), "relative_ce": num(rce)}
                for c, row, ce, rce in zip(self.corruptions, self.errors,
                                           self.ce, self.relative_ce)},
        }
        if self.accuracy is not None:
            out["accuracy"] = self.accuracy.to_dict()
        return out


def corruption_errors(errors, clean_error: float,
                      corruptions: Optional[Sequence[str]] = None) -> CorruptionErrors:
    """CE and relative CE per corruption from an error table.

    Args:
        errors: ``(n, 5)`` top-1 errors (fractions) per corruption and
            severity 1-5, NaN where not measured
        clean_error: the clean top-1 error of the same model
        corruptions (None): the names of the rows (default: the 15 of
            :data:`CORRUPTIONS`, in order)

    Raises:
        ImageNetXError: for a shape that does not match, or a corruption
            without AlexNet's published error
    """
    names = tuple(CORRUPTIONS if corruptions is None else corruptions)
    table = np.asarray(errors, dtype=float)
    if table.shape != (len(names), len(SEVERITIES)):
        raise ImageNetXError(
            f"Corruption errors have shape {table.shape}, not "
            f"({len(names)}, {len(SEVERITIES)}): one row per corruption, one "
            "column per severity 1-5")
    unknown = [c for c in names if c not in ALEXNET_ERRORS]
    if unknown:
        raise ImageNetXError(
            f"No published AlexNet error for {', '.join(unknown)}: use the 15 "
            f"ImageNet-C corruptions ({', '.join(CORRUPTIONS)})")
    alex = np.array([ALEXNET_ERRORS[c] for c in names])
    mean = table.mean(axis=1)  # NaN unless all 5 severities are measured
    ce = mean / alex
    relative = (mean - clean_error) / (alex - ALEXNET_CLEAN_ERROR)
    return CorruptionErrors(names, table, float(clean_error), ce, relative)


@dataclass(frozen=True)
class CorruptionAccuracy:
    """Top-1 (and top-5) accuracy per corruption and severity, and their
    unweighted mean over the cells, as Gavrikov & Keuper's
    ``eval_imagenet_c.py`` / ``eval_imagenet_cbar.py`` average them (each
    corruption x severity pair counts once, whatever its image count).

    Attributes:
        corruptions: the corruption names, rows of the tables
        n: ``(corruptions, 5)`` images scored per cell
        top1: ``(corruptions, 5)`` top-1 accuracy, NaN where ``n`` is 0
        top5: the same for top-5, or None (no logits stored)
    """

    corruptions: tuple
    n: np.ndarray
    top1: np.ndarray
    top5: Optional[np.ndarray] = None

    @property
    def cells(self) -> int:
        """The corruption x severity cells with images."""
        return int((self.n > 0).sum())

    @property
    def complete(self) -> bool:
        """Whether every cell of every corruption has images."""
        return bool((self.n > 0).all())

    @property
    def mean_top1(self) -> float:
        """Unweighted mean top-1 over the cells with images (NaN if none)."""
        return _cell_mean(self.top1)

    @property
    def mean_top5(self) -> float:
        """Unweighted mean top-5 (NaN without top-5)."""
        return float("nan") if self.top5 is None else _cell_mean(self.top5)

    def to_dict(self) -> dict:
        """JSON-ready; NaN becomes None."""
        def num(x):
            return float(x) if np.isfinite(x) else None

        def row(values, k):
            return None if values is None else {
                str(s): num(v) for s, v in zip(SEVERITIES, values[k])}

        return {
            "mean_top1": num(self.mean_top1),
            "mean_top5": num(self.mean_top5),
            "cells": self.cells,
            "of_cells": int(self.n.size),
            "complete": self.complete,
            "corruptions": {
                c: {"n": {str(s): int(v) for s, v in zip(SEVERITIES, self.n[k])},
                    "top1": row(self.top1, k), "top5": row(self.top5, k),
                    "mean_top1": num(_cell_mean(self.top1[k])),
                    "mean_top5": None if self.top5 is None else num(_cell_mean(self.top5[k]))}
                for k, c in enumerate(self.corruptions)},
        }


def _cell_mean(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else float("nan")


def corruption_accuracy(corruption: Sequence[str], severity: Sequence[int], top1,
                        top5=None, corruptions: Sequence[str] = CORRUPTIONS
                        ) -> CorruptionAccuracy:
    """Accuracy per corruption and severity from per-image columns.

    Args:
        corruption: ``(n,)`` each image's corruption name
        severity: ``(n,)`` each image's severity 1-5
        top1: ``(n,)`` bool, the top-1 prediction is right
        top5 (None): ``(n,)`` bool, the class is among the top 5
        corruptions: the table's rows, in order (images of other
            corruptions are left out)

    Raises:
        ImageNetXError: for columns of different lengths
    """
    corruption = np.asarray(corruption, dtype=object)
    severity = np.asarray(severity)
    top1 = np.asarray(top1, dtype=bool)
    columns = [corruption, severity, top1] + ([] if top5 is None else [np.asarray(top5)])
    if len({len(c) for c in columns}) != 1:
        raise ImageNetXError(
            "Corruption, severity and correctness columns differ in length: one "
            "value per image in each")
    names = tuple(corruptions)
    shape = (len(names), len(SEVERITIES))
    n = np.zeros(shape, dtype=np.int64)
    acc1 = np.full(shape, np.nan)
    acc5 = None if top5 is None else np.full(shape, np.nan)
    for k, name in enumerate(names):
        mine = corruption == name
        for j, s in enumerate(SEVERITIES):
            cell = mine & (severity == s)
            n[k, j] = int(cell.sum())
            if n[k, j]:
                acc1[k, j] = top1[cell].mean()
                if acc5 is not None:
                    acc5[k, j] = np.asarray(top5, dtype=bool)[cell].mean()
    return CorruptionAccuracy(names, n, acc1, acc5)
