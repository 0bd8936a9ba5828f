"""App operators: thin adapters over the ``imagenetx`` library."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .attacks import AttackModel
from .discovery import DiscoverSlices
from .edits import EditObjects
from .embeddings import DiscoverEmbeddingSlices, EmbedSamples
from .evaluation_metric import ErrorRatioMetric
from .forms import user_errors
from .hub import PushToHub
from .inference import RunModel
from .load import LoadBenchmark
from .predictions import ImportPredictions
from .probes import ShowProbeMistakes
from .report import ExportReport
from .views import ShowMistakes


class LoadImageNetX(foo.Operator):
    """Attaches ImageNet-X (factor tags, ``imagenetx`` field, ground truth)
    to the current dataset, matching samples by image file name."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="load_imagenetx",
            label="Load ImageNet-X onto this dataset",
            description=(
                "Tag samples with their ImageNet-X top factor (x:<factor>) "
                "and add the imagenetx field, matched by file name"
            ),
            dynamic=False,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        inputs.str("gt_field", label="Ground truth field",
                   default="ground_truth")
        inputs.str("tag_prefix", label="Tag prefix", default="x:")
        return types.Property(inputs, view=types.View(label="Load ImageNet-X"))

    @user_errors
    def execute(self, ctx):
        from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset

        summary = tag_dataset(
            ctx.dataset,
            gt_field=ctx.params.get("gt_field", "ground_truth"),
            tag_prefix=ctx.params.get("tag_prefix", "x:"),
            require_match=True,
        )
        ctx.trigger("reload_dataset")
        return {
            "summary": str(summary),
            "annotated": summary.annotated,
            "unannotated": summary.unannotated,
            "samples_written": summary.samples_written,
        }

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)


def register_operators(plugin):
    plugin.register(LoadImageNetX)
    plugin.register(ImportPredictions)
    plugin.register(RunModel)
    plugin.register(EmbedSamples)
    plugin.register(DiscoverEmbeddingSlices)
    plugin.register(AttackModel)
    plugin.register(LoadBenchmark)
    plugin.register(PushToHub)
    plugin.register(ShowMistakes)
    plugin.register(ShowProbeMistakes)
    plugin.register(DiscoverSlices)
    plugin.register(ExportReport)
    plugin.register(EditObjects)
    plugin.register(ErrorRatioMetric)
