"""The "Show mistakes" operator: one model's errors on one factor."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import add_mode_inputs, mode_params, prediction_fields_or_warning


class ShowMistakes(foo.Operator):
    """Sets the App view to the samples with a factor that a prediction
    field gets wrong, as the panel does when a bar is clicked."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="show_mistakes",
            label="ImageNet-X: show a model's mistakes on a factor",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        from imagenetx.benchmarks.imagenet_x.factors import FACTORS

        inputs = types.Object()
        fields = prediction_fields_or_warning(ctx, inputs)
        if not fields:
            return types.Property(inputs)
        inputs.enum("pred_field", fields, required=True, default=fields[0],
                    label="Prediction field", view=types.DropdownView())
        inputs.enum("factor", list(FACTORS), required=True, label="Factor",
                    view=types.DropdownView())
        add_mode_inputs(inputs)
        return types.Property(inputs, view=types.View(label="Show mistakes"))

    def execute(self, ctx):
        from imagenetx.analysis import mistakes_view

        view = mistakes_view(
            ctx.view,
            ctx.params["pred_field"],
            ctx.params["factor"],
            **mode_params(ctx),
        )
        ctx.ops.set_view(view)
        return {"count": view.count()}
