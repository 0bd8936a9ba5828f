"""The "Show mistakes" operator: one model's errors in one slice."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import add_mode_inputs, add_pred_field_input, mode_params, user_errors


class ShowMistakes(foo.Operator):
    """Sets the App view to the samples of a slice (an ImageNet-X factor, an
    ImageNet-D nuisance, ...) that a prediction field gets wrong, as the
    panel does when a bar is clicked."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="show_mistakes",
            label="ImageNet-X: show a model's mistakes in a slice",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        if not add_pred_field_input(ctx, inputs):
            return types.Property(inputs)
        options = add_mode_inputs(ctx, inputs)
        slicing = ctx.params.get("slicing") or options["default_slicing"]
        values = options["slicings"].get(slicing) or []
        if not values:
            inputs.view("no_values", types.Warning(
                label=f"'{slicing}' has no values in this dataset",
                description="Pick another slicing."))
            return types.Property(inputs)
        inputs.enum("slice", values, required=True,
                    label=options["slice_titles"].get(slicing, "Slice").capitalize(),
                    view=types.DropdownView())
        return types.Property(inputs, view=types.View(label="Show mistakes"))

    @user_errors
    def execute(self, ctx):
        from imagenetx.analysis import mistakes_view

        view = mistakes_view(ctx.view, ctx.params["pred_field"],
                             ctx.params["slice"], **mode_params(ctx))
        ctx.ops.set_view(view)
        return {"count": view.count()}
