"""The "Load the cue-conflict stimuli" operator."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import add_new_dataset_inputs, new_dataset_params, open_built_dataset


class LoadCueConflict(foo.Operator):
    """Builds the dataset of the 1,280 texture-shape cue-conflict stimuli
    (from a folder on the server, or downloaded once into the cache) and
    opens it."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="load_cue_conflict",
            label="Cue conflict: load the texture-shape stimuli",
            description=(
                "Geirhos et al.'s 1,280 stimuli as a dataset: shape, texture, "
                "cue_conflict; then run a model and read its shape bias"
            ),
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        inputs.str("dir", label="Stimuli folder (optional)",
                   description="path on the server laid out as <category>/"
                               "<shape><i>-<texture><j>.png; empty: download "
                               "the public release into the cache")
        add_new_dataset_inputs(inputs, "cue-conflict")
        return types.Property(inputs, view=types.View(label="Load cue conflict"))

    def execute(self, ctx):
        from imagenetx.benchmarks.cue_conflict import load_cue_conflict

        dataset, summary = load_cue_conflict(
            ctx.params.get("dir") or None, **new_dataset_params(ctx))
        return open_built_dataset(ctx, dataset, summary, samples=summary.samples)

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)
