"""Map the labels a dataset already has to the 1000 ImageNet class indices.

Datasets name ImageNet classes in different ways: a class index (``0`` or
``"0"``), a WordNet id (``"n01440764"``), the project's unique label
(``"crane (bird)"``), the toolkit's short name (``"tench"``, or ``"crane"``,
which two classes share) or a long description (``"tench, Tinca tinca"``,
as timm and several exports use). :func:`labels_to_indices` accepts all of
these.
"""

import functools
import importlib.util
import re
from pathlib import Path

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.classes.imagenet import NUM_CLASSES, class_table

_WNID_RE = re.compile(r"^n\d{8}$")


def _normalize(name: str) -> str:
    return " ".join(name.replace("_", " ").lower().split())


def _add(candidates: dict, name: str, index: int) -> None:
    key = _normalize(name)
    if key and index not in candidates.get(key, ()):
        candidates[key] = candidates.get(key, ()) + (index,)


@functools.lru_cache(maxsize=None)
def _name_candidates() -> dict:
    """normalized unique label or toolkit name -> candidate class indices.

    A few toolkit names are shared by two classes ("crane" the bird and
    the machine, "maillot" twice); those map to both candidates, their
    unique labels ("crane (bird)") to one.
    """
    table = class_table()
    candidates = {}
    for i, (label, name) in enumerate(zip(table.labels, table.names)):
        _add(candidates, label, i)
        _add(candidates, name, i)
    return candidates


@functools.lru_cache(maxsize=None)
def _description_candidates() -> dict:
    """normalized WordNet lemmas and their synonyms -> class indices.

    Read from timm's synset files when timm is installed (without importing
    timm, which pulls in torch); only consulted for names the toolkit's
    short names do not cover.
    """
    spec = importlib.util.find_spec("timm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    info = Path(list(spec.submodule_search_locations)[0]) / "data" / "_info"
    lemma_file = info / "imagenet_synset_to_lemma.txt"
    if not lemma_file.is_file():
        return {}
    wnid_to_index = _wnid_to_index()
    candidates = {}
    for line in lemma_file.read_text().splitlines():
        wnid, _, description = line.partition("\t")
        index = wnid_to_index.get(wnid)
        if index is not None:
            _add(candidates, description, index)
            for synonym in description.split(","):
                _add(candidates, synonym, index)
    return candidates


def label_candidates(label) -> tuple:
    """Returns the class indices that a label may denote (empty: none)."""
    if label is None:
        return ()
    if isinstance(label, (int, np.integer)) and not isinstance(label, bool):
        return (int(label),) if 0 <= label < NUM_CLASSES else ()
    text = str(label).strip()
    if text.isdigit():
        index = int(text)
        return (index,) if index < NUM_CLASSES else ()
    if _WNID_RE.match(text):
        index = _wnid_to_index().get(text)
        return () if index is None else (index,)
    key = _normalize(text)
    found = _name_candidates().get(key)
    if found is None:
        found = _description_candidates().get(key, ())
    return found


@functools.lru_cache(maxsize=None)
def _wnid_to_index() -> dict:
    return {w: i for i, w in enumerate(class_table().wnids)}


def labels_to_indices(labels, hints=None, source="labels") -> np.ndarray:
    """Maps labels to ImageNet class indices.

    Args:
        labels: a sequence of labels (index, wnid or name)
        hints (None): an optional sequence of known class indices (or -1),
            used to settle names shared by two classes
        source ("labels"): what the labels are, for the error message

    Returns:
        an int array of class indices

    Raises:
        ImageNetXError: if any label cannot be mapped
    """
    unique = {}
    out = [0] * len(labels)
    bad = {}
    for i, label in enumerate(labels):
        key = label if isinstance(label, (str, int, np.integer)) else str(label)
        cands = unique.get(key)
        if cands is None:
            cands = unique[key] = label_candidates(label)
        if len(cands) == 1:
            out[i] = cands[0]
        elif len(cands) > 1 and hints is not None and hints[i] in cands:
            out[i] = hints[i]
        else:
            bad.setdefault(key, len(cands))

    if bad:
        examples = ", ".join(repr(k) for k in list(bad)[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        ambiguous = any(n > 1 for n in bad.values())
        raise ImageNetXError(
            f"{len(bad)} distinct values of {source} cannot be mapped to the "
            f"1000 ImageNet classes: {examples}{more}. Use class indices "
            "(0-999), WordNet ids (n01440764) or ImageNet class names"
            + (
                " (a name shared by two classes needs its file name to be "
                "an ImageNet-X annotated image)"
                if ambiguous
                else ""
            )
            + ", or pass another ground truth field"
        )
    return np.array(out, dtype=np.int64)
