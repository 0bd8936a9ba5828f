"""Aliases that keep a moved module's names importable from its old place
for one version, with a :class:`DeprecationWarning`."""

import importlib
import warnings
from typing import Callable

#: the version in which the aliases go
REMOVED_IN = "0.2"


def moved_to(old: str, new: str) -> Callable[[str], object]:
    """A module ``__getattr__`` for the old module ``old``: each name is
    taken from the module ``new`` (imported on first use), with a warning.

    Usage, as the whole body of the old module::

        __getattr__ = moved_to(__name__, "imagenetx.present.charts.imagenet_x")
    """

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        warnings.warn(
            f"{old} moved to {new}: import {name} from {new} ({old} goes in "
            f"imagenetx {REMOVED_IN})", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(new), name)

    return __getattr__
