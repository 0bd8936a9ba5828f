"""The classes a model's outputs stand for.

A classifier's logits are over a named set of classes. Most models output
the 1000 ImageNet classes; a zero-shot head can be built over a benchmark's
own classes instead (ImageNet-D's 113, as ImageNet-D scores CLIP). Each
output is stored as a label and a class index in the data contract: for
ImageNet the class's unique label and its index; for ImageNet-D the class's
display name and the first of its ImageNet-1k indices (its classes' index
sets are disjoint, so "the predicted index is one of the image's" is
"the predicted class is the image's").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Tuple

from imagenetx.errors import ImageNetXError

#: the output class sets a zero-shot head can be built over
OUTPUT_CLASSES = ("imagenet", "imagenet_d")


@dataclass(frozen=True)
class OutputClasses:
    """What each output of a classifier stands for.

    Attributes:
        name: ``"imagenet"`` or a benchmark's class set, e.g. ``"imagenet_d"``
        labels: the stored ``label`` of each output
        indices: the stored ``class_index`` of each output (an ImageNet-1k
            index)
        prompt_names: the class name a zero-shot prompt uses for each output
    """

    name: str
    labels: Tuple[str, ...]
    indices: Tuple[int, ...]
    prompt_names: Tuple[str, ...]

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def is_imagenet(self) -> bool:
        """Whether output ``i`` is ImageNet class ``i``."""
        return self.name == "imagenet"


@functools.lru_cache(maxsize=None)
def imagenet_outputs() -> OutputClasses:
    """The 1000 ImageNet classes; prompts use open_clip's
    ``IMAGENET_CLASSNAMES`` (OpenAI's curated names, as OpenCLIP reports)."""
    from imagenetx.classes.imagenet import NUM_CLASSES, class_table  # lazy: start-up

    try:
        from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES
    except ImportError:  # names for prompts only; classifiers need none
        IMAGENET_CLASSNAMES = class_table().names
    return OutputClasses("imagenet", tuple(class_table().labels),
                         tuple(range(NUM_CLASSES)), tuple(IMAGENET_CLASSNAMES))


def imagenet_d_prompt_name(name: str) -> str:
    """ImageNet-D's class name as its ``evaluate_vlm.py`` puts it in a
    prompt: lower case, ``_`` and ``-`` made spaces, ``/`` made " or "."""
    return name.lower().replace("_", " ").replace("-", " ").replace("/", " or ")


@functools.lru_cache(maxsize=None)
def imagenet_d_outputs() -> OutputClasses:
    """The 113 ImageNet-D classes, in their id order."""
    from imagenetx.classes.imagenet_d import imagenet_d_classes  # lazy: start-up

    classes = sorted(imagenet_d_classes(), key=lambda c: c.index)
    return OutputClasses(
        "imagenet_d",
        tuple(c.name for c in classes),
        tuple(c.imagenet_indices[0] for c in classes),
        tuple(imagenet_d_prompt_name(c.name) for c in classes),
    )


def output_classes(name: str) -> OutputClasses:
    """The output classes called ``name`` (one of :data:`OUTPUT_CLASSES`)."""
    if name == "imagenet":
        return imagenet_outputs()
    if name == "imagenet_d":
        return imagenet_d_outputs()
    raise ImageNetXError(
        f"Unknown output classes '{name}': use one of {', '.join(OUTPUT_CLASSES)}")
