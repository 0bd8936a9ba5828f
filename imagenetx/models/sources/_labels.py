"""A classifier's own label list -> our ImageNet-1k class indices.

Hub and zoo classifiers name their outputs (``config.id2label``, a zoo
model's ``classes``). ImageNet-1k models use the standard order with
WordNet lemma strings (``"tench, Tinca tinca"``); some reorder or rename.
Each label is matched to our classes by its wnid, its full lemma string,
its first lemma or our name / label for the class; two classes share a
lemma string (``crane``), so a label matching several classes takes its
own position when that is one of them, else the one left over (in a
reordered head two outputs both named ``crane`` cannot be told apart).
"""

# lazy imports: start-up (a spec is checked without importing torch or the model's library)

from __future__ import annotations

import functools
from typing import Dict, List, Optional, Sequence, Set

import torch

from imagenetx.errors import ImageNetXError
from imagenetx.models.classifier import logits_of


def _norm(text: str) -> str:
    return " ".join(str(text).lower().replace("'", "").replace("_", " ").split())


@functools.lru_cache(maxsize=None)
def _keys() -> Dict[str, Set[int]]:
    """Every name a class is known by (normalized) -> its indices."""
    from imagenetx.classes.imagenet import NUM_CLASSES, class_table

    table = class_table()
    try:  # the WordNet lemma strings Hub configs use
        from timm.data import ImageNetInfo

        info = ImageNetInfo("imagenet-1k")
        lemmas = [info.index_to_description(k) for k in range(NUM_CLASSES)]
    except Exception:  # timm missing or older: our names still match
        lemmas = list(table.names)
    keys: Dict[str, Set[int]] = {}
    for k in range(NUM_CLASSES):
        names = {table.wnids[k], table.names[k], table.labels[k], lemmas[k],
                 lemmas[k].split(", ")[0]}
        for name in names:
            keys.setdefault(_norm(name), set()).add(k)
    return keys


def imagenet_order(labels: Sequence[str], what: str) -> Optional[List[int]]:
    """Our class index of each of a classifier's outputs.

    Args:
        labels: the label of each output, in output order
        what: the model, for messages (``"Hugging Face model 'org/name'"``)

    Returns:
        None when output ``i`` is ImageNet class ``i`` for every ``i``, else
        the class index of each output (a permutation of ``range(1000)``)

    Raises:
        ImageNetXError: when the labels are not the 1000 ImageNet classes
    """
    from imagenetx.classes.imagenet import NUM_CLASSES

    labels = [str(x) for x in labels]
    keys = _keys()
    candidates = [keys.get(_norm(x), set()) for x in labels]
    unknown = [x for x, c in zip(labels, candidates) if not c]
    if len(labels) == NUM_CLASSES and not unknown:
        if all(i in c for i, c in enumerate(candidates)):
            return None
        order = _assign(candidates)
        if order is not None:
            return order
    shown = ", ".join(repr(x) for x in (unknown or labels)[:3])
    raise ImageNetXError(
        f"{what} is not an ImageNet-1k classifier: it has {len(labels)} labels"
        f"{f', {len(unknown)} not ImageNet classes' if unknown and len(labels) == NUM_CLASSES else ''}"
        f" ({shown}, ...): choose a model trained or fine-tuned on ImageNet-1k, or "
        "a CLIP / SigLIP model as a zero-shot classifier")


def _assign(candidates: List[Set[int]]) -> Optional[List[int]]:
    """One class per output (unique matches first, then what is left), or
    None when that is not a one-to-one map."""
    order: List[Optional[int]] = [None] * len(candidates)
    for i, c in enumerate(candidates):
        if len(c) == 1:
            order[i] = next(iter(c))
    used = {k for k in order if k is not None}
    if len(used) != sum(k is not None for k in order):
        return None
    for i, c in enumerate(candidates):
        if order[i] is None:
            left = sorted(c - used)
            if not left:
                return None
            order[i] = i if i in left else left[0]
            used.add(order[i])
    return order  # type: ignore[return-value]


def reorder_to_imagenet(module: torch.nn.Module, order: Optional[List[int]]) -> torch.nn.Module:
    """``module`` (returning logits, a tuple or a ``ModelOutput``) as a
    module returning logits in our class order."""
    if order is None:
        return module
    return ReorderedLogits(module, torch.tensor(order))


class ReorderedLogits(torch.nn.Module):
    """The logits of a model whose output ``i`` is our class ``order[i]``,
    put in our class order."""

    def __init__(self, model: torch.nn.Module, order: torch.Tensor):
        super().__init__()
        self.model = model
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(len(order))
        self.register_buffer("inverse", inverse, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return logits_of(self.model(x)).index_select(1, self.inverse)
