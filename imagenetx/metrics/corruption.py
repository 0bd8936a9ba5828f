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
and on the released ImageNet-C folders.
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
    """

    corruptions: tuple
    errors: np.ndarray
    clean_error: float
    ce: np.ndarray
    relative_ce: np.ndarray

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

        return {
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
