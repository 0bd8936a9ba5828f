"""ImageNet-E's analysis spec: a grouped dataset of edits (see
:mod:`~imagenetx.benchmarks.imagenet_e.contract`) scored on all its slices.

Slicings: ``slice`` (the group slice: ``ori``, ``20_adv``, ``size_0p10``,
...), ``edit`` (the edit kind) and ``edit_level``, beside ImageNet-X's
(``top_factor``, ``factors``, ``metaclass``, ``class``: the source image's
annotations ride on every slice). Label spaces: ImageNet-X's. Every sample
of every slice counts, annotated by ImageNet-X or not.

These are unpaired per-slice accuracies (``imagenetx ratios``); the paired
scores, each edit against the same groups' originals, are
:func:`imagenetx.analysis.paired.paired_scores`.
"""

from imagenetx.benchmarks.base import field_slicing
from imagenetx.benchmarks.imagenet_e.contract import (
    BENCHMARK,
    EDIT_FIELD,
    EDITS,
    GROUP_FIELD,
    LEVEL_FIELD,
    require_grouped,
)
from imagenetx.benchmarks.imagenet_x.benchmark import ImageNetX
from imagenetx.benchmarks.loading import IMAGENET_E, load_hint
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.slicing import Slicing
from imagenetx.store.datasets import all_slices


class ImageNetE(ImageNetX):
    """Grouped datasets of edited images (ImageNet-E, the editor's outputs)."""

    name = BENCHMARK
    title = "ImageNet-E"
    loading = IMAGENET_E
    default_slicing = "slice"
    group_slicing = "edit"
    discovery_slicings = ("slice", "factors", "class")

    def matches(self, samples, settings=None) -> bool:
        return samples.media_type == "group" and samples.has_field(EDIT_FIELD)

    def slicing_names(self, samples, settings):
        return ["slice", "edit", "edit_level", *super().slicing_names(samples, settings)]

    def slicing(self, samples, settings, name):
        if name == "slice":
            slices = tuple(require_grouped(samples))
            return Slicing("slice", f"{GROUP_FIELD}.name", slices, title="variant")
        if name == "edit":
            return Slicing("edit", EDIT_FIELD, EDITS, title="edit")
        if name == "edit_level":
            return field_slicing(all_slices(samples), LEVEL_FIELD)
        return super().slicing(samples, settings, name)

    def base_query(self, settings):
        return None  # every edit of every image counts, prototypes too

    def base_view(self, samples, settings):
        return all_slices(samples)

    def check_fields(self, samples, settings):
        require_grouped(samples)
        for path in (EDIT_FIELD, f"{settings.gt_field}.class_index"):
            if not samples.has_field(path):
                raise ImageNetXError(
                    f"Dataset '{samples._dataset.name}' has no field '{path}' of "
                    f"the grouped-edits contract: {load_hint('imagenet_e')} or make "
                    "edits with `edit_dataset()`")
