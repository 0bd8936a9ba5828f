"""The 1000 ImageNet classes and their 17 ImageNet-X meta-classes.

Everything is read from the files that the ``imagenet-x`` registry package
ships, so that class indices, names and meta-classes match the original
toolkit exactly.
"""

import functools
import importlib.util
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from imagenetx.errors import ImageNetXError

#: the 17 meta-classes of the paper; every other WordNet group is "other"
METACLASSES = (
    "device",
    "dog",
    "commodity",
    "bird",
    "structure",
    "covering",
    "wheeled_vehicle",
    "food",
    "equipment",
    "insect",
    "vehicle",
    "furniture",
    "primate",
    "vessel",
    "snake",
    "natural_object",
    "other",
)

NUM_CLASSES = 1000

#: the label of each class whose toolkit name another class shares, by
#: WordNet id. FiftyOne's evaluation compares label strings, so labels must be
#: unique. The qualifier comes from WordNet (timm's
#: ``data/_info/imagenet_synset_to_lemma.txt`` and ``..._definition.txt``):
#: the synset's second lemma where it has one, else what its gloss says the
#: thing is. Every class of a shared name is qualified, so no label equals a
#: name that earlier versions wrote for two classes.
QUALIFIED_LABELS = {
    "n02012849": "crane (bird)",  # "large long-necked wading bird ..."
    "n03126707": "crane (machine)",  # "lifts and moves heavy objects ..."
    "n03710637": "maillot (tights)",  # "tights for dancers or gymnasts"
    "n03710721": "maillot (tank suit)",  # lemmas "maillot, tank suit"
}

#: environment variable that points the library at another annotations folder
ANNOTATIONS_DIR_ENV = "IMAGENETX_ANNOTATIONS_DIR"

REINSTALL_HINT = (
    "reinstall the annotations with `pip install --force-reinstall imagenet-x`"
)


def annotations_dir() -> Path:
    """Returns the folder holding the ImageNet-X annotation files.

    This is ``imagenet_x/annotations`` of the installed ``imagenet-x``
    package unless ``IMAGENETX_ANNOTATIONS_DIR`` names another folder.
    """
    override = os.environ.get(ANNOTATIONS_DIR_ENV)
    if override:
        return Path(override)

    # find_spec locates the package without running its __init__, which
    # imports pandas and scipy (~1 s)
    spec = importlib.util.find_spec("imagenet_x")
    if spec is None or not spec.submodule_search_locations:
        raise ImageNetXError(
            "The `imagenet-x` package, which ships the annotations, is not "
            "installed: run `pip install imagenet-x`"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "annotations"


def annotation_file(name: str) -> Path:
    """Returns the path of one annotation file, checking that it exists."""
    path = annotations_dir() / name
    if not path.is_file():
        raise ImageNetXError(
            f"ImageNet-X annotation file '{path}' is missing: {REINSTALL_HINT}"
            f" (or unset {ANNOTATIONS_DIR_ENV})"
        )
    return path


@dataclass(frozen=True)
class ClassTable:
    """The 1000 ImageNet classes.

    Attributes:
        wnids: the WordNet ids, ``n01440764`` ...
        names: the toolkit's short class names, ``tench`` ...; two are
            shared by two classes each (``crane``, ``maillot``)
        labels: the unique label of each class, written to every
            ``fo.Classification``: the toolkit's name where it is unique,
            else the label from :data:`QUALIFIED_LABELS`
        metaclass: the meta-class name of each class
        metaclass_index: the index into :data:`METACLASSES` of each class
    """

    wnids: tuple
    names: tuple
    labels: tuple
    metaclass: tuple
    metaclass_index: np.ndarray

    @property
    def shared_names(self) -> frozenset:
        """The toolkit names that more than one class has."""
        return frozenset(n for n, k in Counter(self.names).items() if k > 1)


@functools.lru_cache(maxsize=None)
def class_table() -> ClassTable:
    """Returns the :class:`ClassTable`, read once from the package files."""
    wnids, names = [], []
    path = annotation_file("imagenet_labels.txt")
    try:
        for line in path.read_text().splitlines():
            if line.strip():
                wnid, name = line.split(",", 1)
                wnids.append(wnid.strip())
                names.append(name.strip())
    except (ValueError, UnicodeDecodeError) as e:
        raise ImageNetXError(
            f"Cannot read ImageNet-X annotation file '{path}': {e}; "
            f"{REINSTALL_HINT}"
        ) from e

    path = annotation_file("imagenet_1k_classes_to_100_metaclasses.csv")
    try:
        rows = path.read_text().splitlines()[1:]
        # columns: wnid of the group, group name, group id; the toolkit maps
        # every group outside the 16 named ones to "other"
        groups = [row.split(",")[1].strip() for row in rows if row.strip()]
    except (IndexError, UnicodeDecodeError) as e:
        raise ImageNetXError(
            f"Cannot read ImageNet-X annotation file '{path}': {e}; "
            f"{REINSTALL_HINT}"
        ) from e

    if len(names) != NUM_CLASSES or len(groups) != NUM_CLASSES:
        raise ImageNetXError(
            f"ImageNet-X class files in '{annotations_dir()}' list "
            f"{len(names)} classes and {len(groups)} meta-class rows, not "
            f"{NUM_CLASSES}: {REINSTALL_HINT}"
        )

    metaclass = tuple(g if g in METACLASSES else "other" for g in groups)
    metaclass_index = np.array(
        [METACLASSES.index(m) for m in metaclass], dtype=np.int8
    )
    labels = unique_labels(wnids, names)
    return ClassTable(
        tuple(wnids), tuple(names), labels, metaclass, metaclass_index
    )


def unique_labels(wnids: list, names: list) -> tuple:
    """The unique label of each class (see :attr:`ClassTable.labels`).

    A shared name whose WordNet id :data:`QUALIFIED_LABELS` does not list
    gets its WordNet id as qualifier, ``name (n01234567)``.

    Raises:
        ImageNetXError: if the labels are still not unique
    """
    counts = Counter(names)
    labels = tuple(
        QUALIFIED_LABELS.get(wnid, f"{name} ({wnid})") if counts[name] > 1
        else name
        for wnid, name in zip(wnids, names)
    )
    repeated = [x for x, k in Counter(labels).items() if k > 1]
    if repeated:
        raise ImageNetXError(
            f"ImageNet-X class names in '{annotations_dir()}' give labels "
            f"that are not unique (e.g. '{repeated[0]}'): {REINSTALL_HINT}"
        )
    return labels
