"""The probe protocol and the registry of probes.

A probe is any object with

-   ``name``: ``"spectral"``, ``"corruption"``, ``"critical_band"``, ...
-   ``levels()``: its level keys in order, e.g. ``"low:0.1"``, ``"fog:3"``;
    ``"clean"`` (the unchanged image) where the probe has one
-   ``apply(images, level, seeds)``: float32 ``(n, 3, H, W)`` images in
    ``[0, 1]``, already resized and cropped by the model's data
    configuration, on the model's device, before normalization; ``seeds``:
    one int per image, stable per sample (a resumed run draws the same
    noise); returns ``(n, 3, H, W)`` in ``[0, 1]``

and optionally

-   ``apply_image(image, level, seed)``: the same on one uint8 ``H x W x 3``
    numpy image on the CPU; when present, the DataLoader workers call it
    on the cropped image, so work that only exists on the CPU (the
    ImageNet-C corruptions) runs in parallel with the model
-   ``level_groups(levels)``: which of ``levels`` one decoded pass over the
    images carries (default: all of them in one pass)

:class:`Probe` is the base class with those defaults; a probe need not
inherit from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Sequence

from imagenetx.errors import ImageNetXError
from imagenetx.registry import Registry

if TYPE_CHECKING:  # the command line lists the probes without importing torch
    import torch

#: the level every probe may have: the image unchanged
CLEAN = "clean"

def _check_name(name: str) -> None:
    if not name or not name.replace("_", "").isalnum():
        raise ImageNetXError(
            f"Cannot register probe '{name}': name it with letters, digits and "
            "underscores")


#: probe name -> its class, or ``"module:Class"`` of it (imported on first
#: use); the class is built with keyword options
PROBES: Registry = Registry("probe", check_name=_check_name)
PROBES.register("spectral", "imagenetx.probes.spectral:Spectral")
PROBES.register("corruption", "imagenetx.probes.corruption:Corruptions")
PROBES.register("critical_band", "imagenetx.probes.critical_band:CriticalBand")


class Probe:
    """Base class of probes (see the module docstring for the protocol)."""

    name: str = ""

    def levels(self) -> List[str]:
        raise NotImplementedError

    def apply(self, images: torch.Tensor, level: str,
              seeds: Sequence[int]) -> torch.Tensor:
        raise NotImplementedError

    def level_groups(self, levels: Sequence[str]) -> List[List[str]]:
        """All levels in one pass: each image is decoded once."""
        return [list(levels)]


def register_probe(name: str, probe=None):
    """Adds a probe: ``probe`` is its class (built with the options
    :func:`get_probe` is given) or ``"module:Class"``, imported on first
    use. Without ``probe``, a decorator of the class."""
    return PROBES.register(name, probe)


def probe_names() -> List[str]:
    """The names :func:`get_probe` knows."""
    return PROBES.names()


def get_probe(name: str, **options):
    """Builds the probe called ``name`` with its options.

    Raises:
        ImageNetXError: for an unknown probe, or one whose module is not
            installed in this version
    """
    key = (name or "").replace("-", "_")
    if key not in PROBES:
        raise PROBES.unknown(name)
    return PROBES.get(key)(**options)
