"""The "Load ImageNet-D" operator."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import add_new_dataset_inputs, new_dataset_params, open_built_dataset


class LoadImageNetD(foo.Operator):
    """Builds a dataset from the ImageNet-D release folder on the server
    and opens it."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="load_imagenet_d",
            label="ImageNet-D: load the release folder",
            description=(
                "ImageNet-D/{background,texture,material}/<class>/<id>.png "
                "as a dataset: ground truth with ImageNet-1k indices, nuisance"
            ),
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        inputs.str("release_dir", required=True, label="Release folder",
                   description="path on the server of ImageNet-D/")
        add_new_dataset_inputs(inputs, "imagenet-d")
        return types.Property(inputs, view=types.View(label="Load ImageNet-D"))

    def execute(self, ctx):
        from imagenetx.benchmarks.imagenet_d import load_imagenet_d_dir

        dataset, summary = load_imagenet_d_dir(
            ctx.params["release_dir"], **new_dataset_params(ctx))
        return open_built_dataset(ctx, dataset, summary, samples=summary.samples)

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)
