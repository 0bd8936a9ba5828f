"""The "Show probe mistakes" operator: the images a model gets right on the
clean image and wrong under one probe level (a band-pass cutoff, a
corruption and severity, ...)."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import user_errors


class ShowProbeMistakes(foo.Operator):
    """Sets the App view to :func:`imagenetx.analysis.probes.
    probe_mistakes_view` of a probe field and one of its levels."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="show_probe_mistakes",
            label="ImageNet-X: right on clean, wrong under a probe level",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        from imagenetx.probes.base import CLEAN
        from imagenetx.probes.stored import probe_fields

        inputs = types.Object()
        runs = probe_fields(ctx.dataset)
        if not runs:
            prop = inputs.view("none", types.Error(
                label="No probe results on this dataset",
                description="Run `imagenetx probe spectral` or `imagenetx probe "
                            "corruption` on this dataset first (README: Probes), "
                            "then open this form again."))
            prop.invalid = True
            return types.Property(inputs)
        names = sorted(runs)
        inputs.enum("probe_field", names, required=True, default=names[0],
                    label="Probe results", view=types.DropdownView())
        chosen = runs.get(ctx.params.get("probe_field") or names[0], runs[names[0]])
        levels = [lv for lv in chosen["levels"] if lv != CLEAN]
        inputs.enum("level", levels, required=True, default=levels[0] if levels else None,
                    label="Level", view=types.DropdownView())
        return types.Property(inputs, view=types.View(label="Show probe mistakes"))

    @user_errors
    def execute(self, ctx):
        from imagenetx.analysis.probes import probe_mistakes_view
        from imagenetx.errors import ImageNetXError
        from imagenetx.probes.stored import probe_fields

        runs = probe_fields(ctx.dataset)
        info = runs.get(ctx.params.get("probe_field"))
        if info is None:
            raise ImageNetXError("No probe results on this dataset: run a probe first "
                                 "(`imagenetx probe spectral|corruption ...`)")
        view = probe_mistakes_view(ctx.view, info["field"], info["probe"],
                                   ctx.params["level"])
        ctx.ops.set_view(view)
        return {"count": view.count()}
