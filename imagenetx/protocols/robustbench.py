"""RobustBench's 5,000 ImageNet validation images, shipped with the package
(``data/robustbench/imagenet_test_image_ids.txt``, RobustBench's own file,
MIT), and the rule that picks them out of a dataset: every one of the 5,000
found exactly once, by validation file name.

And its preprocessing by name: the ImageNet L-inf leaderboard's entry ->
preprocessing table (``data/robustbench/imagenet_linf_preprocessing.json``,
read from RobustBench's ``model_zoo/imagenet.py``), and the rule that picks
a run's (:func:`choose_preprocessing`): the one asked for, else the entry's
own, else ``Res256Crop224`` with a departure. The same file says what each
entry's network reads (:func:`entry_normalization`): 11 of the 30 read the
raw ``[0, 1]`` tensor (no ``normalize_model`` around them), the rest
ImageNet's mean / std, whatever their architecture's own configuration
says (``Mo2022When_ViT-B``'s timm config: 0.5 / 0.5).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from imagenetx.errors import ImageNetXError

#: the ids file, as RobustBench ships it
IDS_FILE = Path(__file__).parent / "data" / "robustbench" / "imagenet_test_image_ids.txt"
SUBSET_SIZE = 5000
#: the leaderboard's entry -> preprocessing table, with its source
PREPROCESSING_FILE = IDS_FILE.parent / "imagenet_linf_preprocessing.json"
#: RobustBench's named ImageNet preprocessings (``data.py`` ``PREPROCESSINGS``)
PREPROCESSINGS = ("Res256Crop224", "BicubicRes256Crop224", "Res224", "Crop288")
#: RobustBench's ``get_timm_model_preprocessing``: a timm model's own config
TIMM = "timm"
#: ``--preprocessing`` takes these
PREPROCESSING_CHOICES = (*PREPROCESSINGS, TIMM)
#: what ``load_imagenet`` uses when nothing is named
DEFAULT_PREPROCESSING = "Res256Crop224"
#: the departure of a model outside the zoo that names no preprocessing
NOT_NAMED = "preprocessing not named"


@lru_cache(maxsize=1)
def robustbench_ids() -> Tuple[str, ...]:
    """RobustBench's ``<wnid>/<val file name>`` ids, in its order."""
    with open(IDS_FILE, encoding="utf-8") as f:
        return tuple(line.strip() for line in f if line.strip())


def robustbench_names() -> frozenset:
    """The val file names of the 5,000 images."""
    return frozenset(os.path.basename(i) for i in robustbench_ids())


def select_subset(paths: Sequence[str], dataset: str) -> List[int]:
    """The positions of RobustBench's images among ``paths``.

    Raises:
        ImageNetXError: when a name of the subset is found more than once
            (a dataset that reuses val file names, such as ImageNet-C's
            corruption folders), or when any of the 5,000 is missing
    """
    names = robustbench_names()
    found = [k for k, p in enumerate(paths) if os.path.basename(p) in names]
    counts = Counter(os.path.basename(paths[k]) for k in found)
    repeated = [n for n, c in counts.items() if c > 1]
    if repeated:
        copies = [paths[k] for k in found if os.path.basename(paths[k]) == repeated[0]]
        raise ImageNetXError(
            f"Dataset '{dataset}' holds {len(repeated):,} of RobustBench's ImageNet "
            f"validation file names more than once (e.g. {repeated[0]} at {copies[0]} and "
            f"{copies[1]}): its images reuse val file names (ImageNet-C's corruption "
            "folders), so RobustBench's subset is not defined on it; pass a view with one "
            "copy of each, or `protocol=none` to attack the images as they are")
    if len(counts) < SUBSET_SIZE:
        raise ImageNetXError(
            f"Dataset '{dataset}' holds {len(counts):,} of RobustBench's {SUBSET_SIZE:,} "
            f"ImageNet validation images ({SUBSET_SIZE - len(counts):,} missing, matched by "
            "file name): the robustbench protocol needs all of them, so load the whole "
            "validation set (ImageNet-X from `dir=...`), or pass `protocol=none` with "
            "`attack=autoattack` and `eps=4/255` to attack the images it has")
    return found


@lru_cache(maxsize=1)
def leaderboard() -> Dict[str, str]:
    """Entry name -> its preprocessing (a name of :data:`PREPROCESSINGS`, or
    ``timm:<timm model>`` for the entries RobustBench registers in timm)."""
    with open(PREPROCESSING_FILE, encoding="utf-8") as f:
        return dict(json.load(f)["imagenet_linf"])


#: an entry's input when its network reads the [0, 1] tensor as it is
RAW_MEAN, RAW_STD = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)


@lru_cache(maxsize=1)
def entry_inputs() -> Dict[str, dict]:
    """Entry name -> what its network reads (``input``: ``raw`` or
    ``normalized``, ``mean``, ``std``, ``where``: the line of RobustBench's
    code that says so)."""
    with open(PREPROCESSING_FILE, encoding="utf-8") as f:
        return dict(json.load(f)["imagenet_linf_input"])


def entry_normalization(entry: str) -> Tuple[Tuple[float, ...], Tuple[float, ...]]:
    """``(mean, std)`` RobustBench applies before an entry's network: none
    (``(0, 0, 0)`` / ``(1, 1, 1)``) where it reads the raw tensor, its own
    elsewhere (ImageNet's, for every normalized entry at the pinned
    commit)."""
    e = entry_inputs()[entry]
    if e["input"] == "raw":
        return RAW_MEAN, RAW_STD
    return tuple(e["mean"]), tuple(e["std"])


def leaderboard_entry(spec: str) -> Optional[str]:
    """The leaderboard entry a model spec is, or None: a ``checkpoint:``
    file named after the entry (RobustBench saves ``<entry>.pt``), or a
    ``timm:`` model RobustBench registers for an entry."""
    scheme, _, rest = spec.partition(":")
    table = leaderboard()
    if scheme == "checkpoint":
        stem = os.path.splitext(os.path.basename(rest))[0]
        return stem if stem in table else None
    if scheme == "timm":
        name = rest.split(".")[0]
        return next((e for e, p in table.items() if p == f"{TIMM}:{name}"), None)
    return None


def entry_preprocessing(entry: str) -> str:
    """An entry's own preprocessing name (``timm`` for RobustBench's timm
    registrations)."""
    own = leaderboard()[entry]
    return TIMM if own.startswith(f"{TIMM}:") else own


def choose_preprocessing(spec: str, asked: Optional[str]) -> Tuple[str, Optional[str],
                                                                   Tuple[str, ...]]:
    """The preprocessing a run under RobustBench's protocol uses.

    Args:
        spec: the model spec
        asked: ``--preprocessing`` (None: not given)

    Returns:
        ``(name, entry, departures)``: a name of
        :data:`PREPROCESSING_CHOICES`; the leaderboard entry (None: not
        one); ``("preprocessing",)`` when ``asked`` is not the entry's own,
        ``(NOT_NAMED,)`` when neither names one
    """
    entry = leaderboard_entry(spec)
    own = leaderboard()[entry] if entry else None
    own = TIMM if own and own.startswith(f"{TIMM}:") else own
    if asked is not None:
        return asked, entry, (("preprocessing",) if own and asked != own else ())
    if own:
        return own, entry, ()
    return DEFAULT_PREPROCESSING, None, (NOT_NAMED,)
