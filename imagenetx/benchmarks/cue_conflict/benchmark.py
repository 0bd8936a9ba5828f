"""The cue-conflict benchmark's analysis spec.

Slicings: ``shape`` and ``texture`` category, and ``cue_conflict`` (shape
and texture differ). Label spaces over the 16 categories: ``shape`` (the
decision is the shape category: the ground truth) and ``texture`` (it is
the texture category). A 1000-way model is asked through model-vs-human's
mapping (:class:`~imagenetx.classes.decisions.Decisions`): each category's
mean softmax probability over its ImageNet indices, the best one wins.
"""

from imagenetx.benchmarks.base import Benchmark
from imagenetx.benchmarks.loading import CUE_CONFLICT
from imagenetx.benchmarks.cue_conflict.contract import (  # noqa: F401 (re-exported)
    CONTRACT_FIELDS, require_contract)
from imagenetx.benchmarks.cue_conflict.views import save_texture_view
from imagenetx.classes.cue_conflict import categories, mean_matrix
from imagenetx.classes.decisions import Decisions
from imagenetx.classes.spaces import ExactClass
from imagenetx.metrics.slicing import Slicing

NOT_16 = ("it is not a 16-class decision: predict on this dataset with "
          "`predict()` (it maps the 1000 ImageNet classes onto the 16 "
          "categories) or import published responses")


class CueConflict(Benchmark):
    """Geirhos et al.'s texture-shape cue-conflict stimuli."""

    name = "cue_conflict"
    title = "Cue-conflict"
    loading = CUE_CONFLICT
    default_slicing = "shape"
    default_label_space = "shape"
    group_slicing = "shape"

    def matches(self, samples, settings=None) -> bool:
        return all(samples.has_field(f) for f in CONTRACT_FIELDS)

    def check_fields(self, samples, settings):
        require_contract(samples, settings.gt_field)

    def slicing_names(self, samples, settings):
        return ["shape", "texture", "cue_conflict"]

    def slicing(self, samples, settings, name):
        if name in ("shape", "texture"):
            return Slicing(name, name, categories(), title=f"{name} category")
        if name == "cue_conflict":
            return Slicing(name, name, (True, False), title="cue conflict")
        return None

    def label_spaces(self, settings):
        k = len(categories())
        return {
            "shape": ExactClass(f"{settings.gt_field}.class_index", k, "shape",
                                "the decision is the shape category", NOT_16),
            "texture": ExactClass("texture_index", k, "texture",
                                  "the decision is the texture category", NOT_16),
        }

    def predictions_written(self, dataset, field: str) -> None:
        """Also saves the view of the field's texture-driven decisions."""
        super().predictions_written(dataset, field)
        save_texture_view(dataset, field)

    def decisions(self) -> Decisions:
        return Decisions("16-class (model-vs-human)", categories(), mean_matrix())
