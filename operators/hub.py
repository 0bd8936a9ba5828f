"""The "Load from the Hugging Face Hub" operator."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import add_new_dataset_inputs, new_dataset_params, open_built_dataset


class LoadFromHub(foo.Operator):
    """Pulls a dataset from the Hugging Face Hub, tags it with ImageNet-X (or
    converts an ImageNet-D copy) and opens it. The token is the plugin
    secret ``HF_TOKEN``."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="load_from_hub",
            label="ImageNet-X: load a dataset from the Hugging Face Hub",
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        inputs.str("repo_id", required=True, label="Repo id",
                   description="ORG/NAME of a FiftyOne dataset on the Hub")
        inputs.str("split", label="Split", description="optional")
        inputs.int("max_samples", label="Max samples",
                   description="optional: load at most this many")
        add_new_dataset_inputs(inputs, description="optional: the repo id by default")
        return types.Property(inputs, view=types.View(label="Load from the Hub"))

    def execute(self, ctx):
        from imagenetx.benchmarks.imagenet_x.sources import load_hub_dataset

        dataset, summary = load_hub_dataset(
            ctx.params["repo_id"],
            split=ctx.params.get("split") or None,
            max_samples=ctx.params.get("max_samples") or None,
            token=ctx.secrets.get("HF_TOKEN"),
            **new_dataset_params(ctx),
        )
        # an ImageNet-D repo gives an ImageNetDSummary, without "annotated"
        return open_built_dataset(ctx, dataset, summary,
                                  annotated=getattr(summary, "annotated", 0))

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)
