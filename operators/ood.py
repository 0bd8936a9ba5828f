"""The "Load an OOD benchmark" operator (ImageNet-A, -R, -Sketch, V2, -C)."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import add_new_dataset_inputs, new_dataset_params, open_built_dataset


class LoadOOD(foo.Operator):
    """Builds a dataset from an OOD benchmark's release folder on the
    server and opens it."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="load_ood",
            label="ImageNet-A/R/Sketch/V2/C: load a release folder",
            description=("an OOD benchmark's release folder as a dataset: ImageNet-1k "
                         "ground truth, variant (V2), corruption and severity (C)"),
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        from imagenetx.benchmarks.ood.layouts import LAYOUTS
        from imagenetx.options import V2_VARIANTS

        inputs = types.Object()
        choices = types.Dropdown()
        for layout in LAYOUTS.values():
            choices.add_choice(layout.kind, label=layout.title, description=layout.folders)
        inputs.enum("kind", choices.values(), required=True, default="a",
                    label="Benchmark", view=choices)
        kind = ctx.params.get("kind") or "a"
        inputs.str("release_dir", required=True, label="Release folder",
                   description=f"path on the server: {LAYOUTS[kind].folders}")
        if kind == "v2":
            inputs.enum("variant", list(V2_VARIANTS), label="Variant",
                        description="only when the folder name does not say it",
                        view=types.DropdownView())
        add_new_dataset_inputs(inputs, LAYOUTS[kind].default_name)
        return types.Property(inputs, view=types.View(label="Load an OOD benchmark"))

    def execute(self, ctx):
        from imagenetx.benchmarks.ood import load_ood_dir

        kind = ctx.params.get("kind") or "a"
        dataset, summary = load_ood_dir(
            kind, ctx.params["release_dir"],
            variant=ctx.params.get("variant") if kind == "v2" else None,
            **new_dataset_params(ctx))
        return open_built_dataset(ctx, dataset, summary, samples=summary.samples)

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)
