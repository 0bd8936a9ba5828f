"""ImageNet-D's analysis spec: slicings by nuisance kind (and, where the data carries
it, the specific nuisance value, and the class), and one label space: a
1000-way model is right when its top-1 index is any ImageNet-1k index of the
image's class (``ground_truth.imagenet_indices``), as the authors'
``evaluate_imagenet_models.py`` scores it.
"""

from imagenetx.benchmarks.base import Benchmark, field_slicing
from imagenetx.classes.imagenet_d import NUISANCES
from imagenetx.classes.spaces import InSet
from imagenetx.metrics.slicing import Slicing


class ImageNetD(Benchmark):
    """ImageNet-D's analysis spec (see the module docstring)."""

    name = "imagenet_d"
    title = "ImageNet-D"
    default_slicing = "nuisance"
    default_label_space = "class"
    group_slicing = "nuisance"

    def matches(self, samples) -> bool:
        return samples.has_field("nuisance") and samples.has_field(
            "ground_truth.imagenet_indices")

    def slicings(self, samples, settings):
        out = {"nuisance": Slicing("nuisance", "nuisance", NUISANCES,
                                   title="nuisance")}
        if samples.has_field("nuisance_value"):
            out["nuisance_value"] = field_slicing(samples, "nuisance_value")
        out["class"] = field_slicing(samples, f"{settings.gt_field}.label")
        out["class"] = Slicing("class", out["class"].path, out["class"].values,
                               title="class")
        return out

    def label_spaces(self, settings):
        return {"class": InSet(f"{settings.gt_field}.imagenet_indices", "class",
                               empty="count")}

    def base_view(self, samples, settings):
        return samples.match({"nuisance": {"$ne": None}})
