"""The "Load from the Hugging Face Hub" operator."""

import fiftyone.operators as foo
import fiftyone.operators.types as types


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
        inputs.str("name", label="Dataset name",
                   description="optional: the repo id by default")
        inputs.bool("overwrite", default=False,
                    label="Replace an existing dataset of that name")
        return types.Property(inputs, view=types.View(label="Load from the Hub"))

    def execute(self, ctx):
        from imagenetx.benchmarks.imagenet_x.sources import load_hub_dataset

        dataset, summary = load_hub_dataset(
            ctx.params["repo_id"],
            split=ctx.params.get("split") or None,
            max_samples=ctx.params.get("max_samples") or None,
            name=ctx.params.get("name") or None,
            overwrite=bool(ctx.params.get("overwrite")),
            token=ctx.secrets.get("HF_TOKEN"),
        )
        if not ctx.delegated:
            ctx.ops.open_dataset(dataset.name)
        # an ImageNet-D repo gives an ImageNetDSummary, without "annotated"
        return {"dataset": dataset.name, "summary": str(summary),
                "annotated": getattr(summary, "annotated", 0)}

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)
