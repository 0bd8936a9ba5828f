"""The edit kinds, their levels, and the group slice each edit fills.

An edit is written ``KIND[:LEVEL,LEVEL...]`` on the command line, e.g.
``size:0.1,0.08,0.05``, ``position``, ``direction:30,90``,
``background:random`` or ``background:/textures/bricks.png``. Each
(kind, level) pair is one :class:`Edit`, and fills the group slice
``<kind>_<level>`` (``position`` alone). FiftyOne rejects ``.`` in group
slice names, so a level's dot is written ``p``: ``size_0p10``,
``direction_22p5``; other characters than letters, digits, ``-`` and ``_``
become ``_``.

Kinds that need a learned model are registered without an implementation
(:data:`EDIT_KINDS`), so asking for them fails with a message that says
what is missing; :func:`register_edit_kind` adds or replaces a kind, e.g.
ImageNet-E's diffusion-guided background complexity given a model.
"""

import math
import os
import re
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Union

from imagenetx.errors import ImageNetXError
from imagenetx.registry import Registry

#: the ``edit`` field of the original samples
ORIGINAL_EDIT = "original"


@dataclass(frozen=True)
class Edit:
    """One edit at one level.

    Attributes:
        kind: the registered kind, e.g. ``size``
        level: the level as stored in ``edit_level``, e.g. ``"0.10"``,
            ``"90"``, ``"random"``, a texture's file stem; ``"random"`` for
            position
        value: what the operation takes: a float (size, direction), a
            texture's path, or None
    """

    kind: str
    level: str
    value: Union[float, str, None] = None

    @property
    def edit(self) -> str:
        """The ``edit`` field of its samples (the kind's attribute)."""
        return EDIT_KINDS.get(self.kind).edit

    @property
    def slice(self) -> str:
        """The group slice it fills."""
        if not EDIT_KINDS.get(self.kind).levels:
            return self.kind
        token = re.sub(r"[^A-Za-z0-9_-]", "_", self.level.replace(".", "p"))
        return f"{self.kind}_{token}"


@dataclass(frozen=True)
class EditKind:
    """A kind of edit.

    Attributes:
        name: what a spec calls it, e.g. ``size``
        edit: the attribute it changes, stored in ``edit``: ``size``,
            ``position``, ``direction`` or ``background``
        levels: whether it takes levels (``size:0.1``) or none
            (``position``)
        parse: turns one level string into ``(stored level, value)``,
            raising ImageNetXError for a bad one
        needs: for a kind without an implementation here, what it needs
            (the error names it)
    """

    name: str
    edit: str
    levels: bool
    parse: Optional[Callable[[str], tuple]] = None
    needs: Optional[str] = None
    example: str = ""


def _size_level(text: str) -> tuple:
    value = _number(text, "size")
    if not 0 < value < 1:
        raise ImageNetXError(
            f"Size level {text} is out of range: give the object's share of "
            "the image's pixels, between 0 and 1 (e.g. size:0.1,0.08,0.05)")
    # two decimals like ImageNet-E's levels (0.10, 0.08, 0.05) unless finer
    level = f"{value:.2f}" if round(value, 2) == value else f"{value:g}"
    return level, value


def _direction_level(text: str) -> tuple:
    value = _number(text, "direction")
    if not -360 <= value <= 360:
        raise ImageNetXError(
            f"Direction level {text} is out of range: give an angle in "
            "degrees between -360 and 360 (e.g. direction:30,90)")
    return f"{value:g}", value


def _background_level(text: str) -> tuple:
    if text == "random":
        return "random", None
    if not os.path.isfile(text):
        raise ImageNetXError(
            f"Background level '{text}' is neither 'random' nor an image "
            "file: give background:random (another sample's background) or "
            "the path of a texture image, e.g. background:/data/bricks.png")
    import cv2

    if cv2.imread(text, cv2.IMREAD_COLOR) is None:
        raise ImageNetXError(
            f"Background texture '{text}' cannot be read as an image: give "
            "a PNG or JPEG file")
    return os.path.splitext(os.path.basename(text))[0], os.path.abspath(text)


def _number(text: str, kind: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ImageNetXError(
            f"{kind.capitalize()} level '{text}' is not a number") from None
    if not math.isfinite(value):
        raise ImageNetXError(f"{kind.capitalize()} level '{text}' is not a finite number")
    return value


#: the known kinds by name; ``complexity`` (ImageNet-E's diffusion-guided
#: background complexity, its ``20_smooth``, ``20_hard`` and ``20_adv``
#: folders) is registered without an implementation
EDIT_KINDS: Registry = Registry("edit")


def register_edit_kind(kind: EditKind) -> EditKind:
    """Adds a kind of edit, or replaces the one of that name.

    A kind with ``needs`` set is refused when asked for; to run a learned
    edit, register it with a ``parse`` and give
    :func:`imagenetx.edits.apply.edit_dataset` an ``operations`` entry for
    it (a function ``(image, mask, edit, rng, background, clean) ->
    Edited``, see :data:`imagenetx.edits.apply.OPERATIONS`).
    """
    return EDIT_KINDS.register(kind.name, kind)


for _kind in (
    EditKind("size", "size", True, _size_level, example="size:0.1,0.08,0.05"),
    EditKind("position", "position", False, example="position"),
    EditKind("direction", "direction", True, _direction_level,
             example="direction:30,90"),
    EditKind("background", "background", True, _background_level,
             example="background:random"),
    EditKind("complexity", "background", True,
             needs="a learned model: ImageNet-E changes background complexity "
                   "with a guided diffusion model on a GPU, which this editor "
                   "does not ship",
             example="complexity:-20,20"),
):
    register_edit_kind(_kind)


def parse_edits(specs: Sequence[Union[str, Edit]]) -> List[Edit]:
    """Parses edit specs, e.g. ``["size:0.1,0.08", "position"]``.

    Returns:
        the edits, in order, without repeats

    Raises:
        ImageNetXError: for an unknown kind, a kind that needs what is not
            here, a missing, extra or out-of-range level, or no edit at all
    """
    edits: List[Edit] = []
    for spec in specs:
        if isinstance(spec, Edit):
            edits.append(spec)
            continue
        name, sep, levels = str(spec).strip().partition(":")
        if name not in EDIT_KINDS:
            known = [k.example for _, k in EDIT_KINDS.items() if not k.needs]
            raise EDIT_KINDS.unknown(spec, known)
        kind = EDIT_KINDS.get(name)
        if kind.needs:
            raise ImageNetXError(
                f"Edit '{spec}' needs {kind.needs}: register an implementation "
                "with imagenetx.edits.register_edit_kind, or leave it out")
        if not kind.levels:
            if sep:
                raise ImageNetXError(
                    f"Edit '{spec}' takes no level: write it as '{kind.name}'")
            edits.append(Edit(kind.name, "random"))
            continue
        texts = [t.strip() for t in levels.split(",") if t.strip()]
        if not texts:
            raise ImageNetXError(
                f"Edit '{spec}' needs levels: write it e.g. as '{kind.example}'")
        for text in texts:
            level, value = kind.parse(text)
            edits.append(Edit(kind.name, level, value))
    if not edits:
        raise ImageNetXError("No edits given: name at least one, e.g. size:0.1 position")
    unique = list(dict.fromkeys(edits))
    slices = [e.slice for e in unique]
    clash = next((s for s in slices if slices.count(s) > 1), None)
    if clash:
        raise ImageNetXError(
            f"Two edits would fill the same group slice '{clash}': give "
            "textures different file names")
    return unique
