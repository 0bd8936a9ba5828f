"""The 15 ImageNet-C corruptions x 5 severities, applied while predicting.

The corruptions are ``imagecorruptions-imaug``'s, the maintained fork
of ``imagecorruptions`` (which generalizes Hendrycks & Dietterich's
``make_imagenet_c.py`` to any image size), carried verbatim in
:mod:`imagenetx.probes.imagecorruptions` because the package pulls the GUI
OpenCV beside FiftyOne's headless one; docs/benchmarks/ood.md says why not the
2020 release. They work on uint8 ``H x W x 3`` images on the CPU, so the
DataLoader workers apply them to the image after the model's resize and
crop (as ImageNet-C corrupts the 224 x 224 centre crop) and before
normalization, while the model predicts the previous batch.

Levels: ``clean`` and ``<corruption>:<severity>``. Each image's noise is
drawn from its own seed (stable per sample) mixed with the level, so a
re-run draws the same corrupted image.
"""

import warnings
import zlib
from typing import List, Optional, Sequence

import numpy as np
import torch

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.corruption import CORRUPTIONS, SEVERITIES
from imagenetx.probes.base import CLEAN, Probe

#: corruptions whose function takes its own ``seed`` (the rest draw from
#: numpy's global generator, seeded per image)
_SEEDED = {"impulse_noise", "glass_blur"}


def level_key(corruption: str, severity: int) -> str:
    """``"fog:3"``."""
    return f"{corruption}:{severity}"


def parse_corruptions(specs: Optional[Sequence[str]]) -> List[str]:
    """Level keys from ``NAME[:SEVERITY]`` specs or ``all``.

    Args:
        specs: e.g. ``["fog:3", "snow"]`` (a name alone: its 5 severities)
            or ``["all"]``; None or empty: all 15 x 5

    Raises:
        ImageNetXError: for an unknown corruption or a severity outside 1-5
    """
    if not specs or list(specs) == ["all"]:
        return [level_key(c, s) for c in CORRUPTIONS for s in SEVERITIES]
    levels = []
    for spec in specs:
        name, sep, severity = str(spec).partition(":")
        if name not in CORRUPTIONS:
            raise ImageNetXError(
                f"Unknown corruption '{name}' in '{spec}': use all or NAME[:SEVERITY] "
                f"with NAME one of {', '.join(CORRUPTIONS)}")
        if sep:
            if not severity.isdigit() or int(severity) not in SEVERITIES:
                raise ImageNetXError(
                    f"Unknown severity '{severity}' in '{spec}': use 1 to 5, "
                    f"e.g. {name}:3, or {name} alone for all five")
            keys = [level_key(name, int(severity))]
        else:
            keys = [level_key(name, s) for s in SEVERITIES]
        levels += [k for k in keys if k not in levels]
    return levels


def corrupt_image(image: np.ndarray, corruption: str, severity: int,
                  seed: int) -> np.ndarray:
    """One corrupted copy of a uint8 ``H x W x 3`` image, the same for the
    same seed."""
    from imagenetx.probes.imagecorruptions import corrupt  # lazy: start-up

    np.random.seed(seed % 2**32)
    kwargs = {"seed": seed % 2**32} if corruption in _SEEDED else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = corrupt(image, severity=severity, corruption_name=corruption, **kwargs)
    return np.ascontiguousarray(out[..., :3], dtype=np.uint8)


class Corruptions(Probe):
    """ImageNet-C corruptions (``specs``: see :func:`parse_corruptions`),
    plus the clean image."""

    name = "corruption"

    def __init__(self, specs: Optional[Sequence[str]] = None):
        self._levels = [CLEAN] + parse_corruptions(specs)
        _check_installed()

    def levels(self) -> List[str]:
        return list(self._levels)

    def level_groups(self, levels: Sequence[str]) -> List[List[str]]:
        """One pass per corruption (the clean level rides with the first):
        the workers hold at most 6 copies of each image."""
        groups: dict = {}
        for level in levels:
            groups.setdefault(level.partition(":")[0], []).append(level)
        out = [g for k, g in groups.items() if k != CLEAN]
        if CLEAN in groups:
            out = [groups[CLEAN] + (out[0] if out else [])] + out[1:]
        return out

    def apply_image(self, image: np.ndarray, level: str, seed: int) -> np.ndarray:
        if level == CLEAN:
            return image
        name, _, severity = level.partition(":")
        # each level its own stream: fog:3 and snow:3 draw independent noise
        mixed = (int(seed) * 1_000_003 + zlib.crc32(level.encode())) % 2**32
        return corrupt_image(image, name, int(severity), mixed)

    def apply(self, images: torch.Tensor, level: str,
              seeds: Sequence[int]) -> torch.Tensor:
        """The same on a float batch (through uint8 on the CPU, as the
        corruptions are defined)."""
        if level == CLEAN:
            return images
        arrays = (images.clamp(0, 1) * 255).round().to(torch.uint8)
        arrays = arrays.permute(0, 2, 3, 1).cpu().numpy()
        out = np.stack([self.apply_image(a, level, s) for a, s in zip(arrays, seeds)])
        return torch.from_numpy(out).permute(0, 3, 1, 2).to(images.device).float() / 255


def _check_installed() -> None:
    try:
        import imagenetx.probes.imagecorruptions  # noqa: F401  # lazy: start-up
    except ImportError as e:
        raise ImageNetXError(
            "Corruptions need numba, scikit-image and the headless OpenCV: pip install "
            f"numba scikit-image opencv-python-headless ({e})") from e
