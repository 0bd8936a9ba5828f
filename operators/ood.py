"""The "Load an OOD benchmark" operator (ImageNet-A, -R, -Sketch, V2, -C)."""

import fiftyone.operators.types as types

from .forms import LoadReleaseFolder


def _kind(ctx) -> str:
    return ctx.params.get("kind") or "a"


class LoadOOD(LoadReleaseFolder):
    """Builds a dataset from an OOD benchmark's release folder on the
    server and opens it."""

    OPERATOR = "load_ood"
    LABEL = "ImageNet-A/R/Sketch/V2/C: load a release folder"
    DESCRIPTION = ("an OOD benchmark's release folder as a dataset: ImageNet-1k "
                   "ground truth, variant (V2), corruption and severity (C)")
    FORM_TITLE = "Load an OOD benchmark"
    DYNAMIC = True  # the variant input, folder help and default name follow the benchmark

    def add_inputs(self, ctx, inputs):
        from imagenetx.benchmarks.ood.layouts import LAYOUTS
        from imagenetx.options import V2_VARIANTS

        choices = types.Dropdown()
        for layout in LAYOUTS.values():
            choices.add_choice(layout.kind, label=layout.title, description=layout.folders)
        inputs.enum("kind", choices.values(), required=True, default="a",
                    label="Benchmark", view=choices)
        if _kind(ctx) == "v2":
            inputs.enum("variant", list(V2_VARIANTS), label="Variant",
                        description="only when the folder name does not say it",
                        view=types.DropdownView())

    def folder_help(self, ctx) -> str:
        from imagenetx.benchmarks.ood.layouts import LAYOUTS

        return f"path on the server: {LAYOUTS[_kind(ctx)].folders}"

    def default_name(self, ctx) -> str:
        from imagenetx.benchmarks.ood.layouts import LAYOUTS

        return LAYOUTS[_kind(ctx)].default_name

    def load(self, ctx, folder, **dataset_params):
        from imagenetx.benchmarks.ood import load_ood_dir

        kind = _kind(ctx)
        return load_ood_dir(kind, folder, variant=ctx.params.get("variant") if kind == "v2"
                            else None, **dataset_params)
