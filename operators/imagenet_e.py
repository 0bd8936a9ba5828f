"""The "Load ImageNet-E" operator."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import add_new_dataset_inputs, new_dataset_params, open_built_dataset


class LoadImageNetE(foo.Operator):
    """Builds a grouped dataset from the ImageNet-E release folder on the
    server and opens it."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="load_imagenet_e",
            label="ImageNet-E: load the release folder",
            description=(
                "labels.txt, ori/ and the edit folders (20_adv/, 01/, rp/, ...) as a "
                "grouped dataset: one group per source image, one slice per edit"
            ),
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        inputs.str("release_dir", required=True, label="Release folder",
                   description="path on the server of the folder holding labels.txt and ori/")
        add_new_dataset_inputs(inputs, "imagenet-e")
        return types.Property(inputs, view=types.View(label="Load ImageNet-E"))

    def execute(self, ctx):
        from imagenetx.benchmarks.imagenet_e import load_imagenet_e

        dataset, summary = load_imagenet_e(
            ctx.params["release_dir"], **new_dataset_params(ctx))
        return open_built_dataset(ctx, dataset, summary, samples=summary.samples_total,
                                  groups=summary.groups)

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)
