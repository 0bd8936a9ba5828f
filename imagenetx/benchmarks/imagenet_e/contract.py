"""The grouped-edits contract: one FiftyOne group per source image, one
group slice per edit of it, the original the default slice.

Every dataset of edited images follows it (the ImageNet-E release loaded by
:mod:`~imagenetx.benchmarks.imagenet_e.loaders`, and the editor's outputs),
so the paired scores (:mod:`imagenetx.analysis.paired`) work on any of them:

-   the group field ``group`` (``fo.Group``); the default group slice
    ``ori``, the unedited original
-   ``ground_truth``: ``fo.Classification`` with the ImageNet ``label`` and
    ``class_index`` (the same on every slice of a group)
-   ``edit``: str, what was changed: ``original``, ``background``, ``size``,
    ``position``, ``direction``, or ``other`` (ImageNet-E's undocumented
    ``full`` and ``rec`` folders)
-   ``edit_level``: str, how: ``-20`` / ``+20`` / ``adversarial`` /
    ``random`` (background), ``0.10`` / ``0.08`` / ``0.05`` (object pixel
    ratio), ``random`` (position, direction); None for the original
-   the ImageNet-X fields of the source image (``imagenetx`` and an
    ``x:<factor>`` tag), on every slice, matched by file stem
-   ``dataset.info["imagenetx"]["benchmark"] == "imagenet_e"``
"""

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from imagenetx.errors import ImageNetXError

BENCHMARK = "imagenet_e"
GROUP_FIELD = "group"
ORIGINAL = "ori"
EDIT_FIELD = "edit"
LEVEL_FIELD = "edit_level"
#: the edit kinds, in display order
EDITS = ("original", "background", "size", "position", "direction", "other")


@dataclass(frozen=True)
class Variant:
    """One folder of the ImageNet-E release: its slice, edit and level."""

    folder: str
    edit: str
    level: Optional[str]
    description: str


#: the release's folders, in the paper's order. The names come from the
#: release (a third-party listing); the levels of the background folders
#: follow the toolkit's ``run.sh`` (a positive complexity is ``--hard``)
VARIANTS: Tuple[Variant, ...] = (
    Variant("ori", "original", None, "the unedited validation image"),
    Variant("full", "other", "full", "undocumented by the release"),
    Variant("20_smooth", "background", "-20", "background complexity -20 (smoother)"),
    Variant("20_hard", "background", "+20", "background complexity +20 (more complex)"),
    Variant("20_adv", "background", "adversarial", "background complexity optimised against a model"),
    Variant("random_bg", "background", "random", "the background of another image"),
    Variant("rec", "other", "rec", "undocumented by the release (a reconstruction, by its name)"),
    Variant("01", "size", "0.10", "object resized to 10% of the pixels"),
    Variant("008", "size", "0.08", "object resized to 8% of the pixels"),
    Variant("005", "size", "0.05", "object resized to 5% of the pixels"),
    Variant("rp", "position", "random", "object moved to a random position"),
    Variant("rd", "direction", "random", "object rotated by a random angle"),
)


def variants() -> Dict[str, Variant]:
    """``{folder: Variant}`` of the release."""
    return {v.folder: v for v in VARIANTS}


def require_grouped(samples, original: str = ORIGINAL) -> List[str]:
    """Checks that a collection follows the grouped-edits contract.

    Returns:
        its group slice names, the original first

    Raises:
        ImageNetXError: for a collection that is not grouped, or has no
            original slice
    """
    name = samples._dataset.name
    if samples.media_type != "group":
        raise ImageNetXError(
            f"Dataset '{name}' is not a grouped dataset: paired scores compare "
            "each group's edited slices with its original. Load ImageNet-E "
            "from `dir=...` (its release folder), or make edits with "
            "`edit_dataset()`")
    slices = list(samples._dataset.group_slices)
    if original not in slices:
        raise ImageNetXError(
            f"Dataset '{name}' has no '{original}' group slice (the originals): "
            f"its slices are {', '.join(slices)}")
    return [original] + [s for s in slices if s != original]


def check_slices(samples, names, original: str = ORIGINAL) -> List[str]:
    """The named slices of a grouped collection, checked.

    Raises:
        ImageNetXError: for a name that is not a group slice
    """
    known = require_grouped(samples, original)
    unknown = [s for s in names if s not in known]
    if unknown:
        raise ImageNetXError(
            f"Unknown group slice '{unknown[0]}' of dataset "
            f"'{samples._dataset.name}': its slices are {', '.join(known)}")
    return list(dict.fromkeys(names))
