"""The "Discover slices" operator: the conjunctions of slices where a model
fails most, and the mistakes of one of them as the App's view."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from imagenetx.options import (
    DISCOVERY_MAX_ORDER,
    DISCOVERY_MIN_SUPPORT,
    DISCOVERY_TOP_K,
    REAL_MODES,
)

from .forms import prediction_fields_or_warning


class DiscoverSlices(foo.Operator):
    """Runs :func:`imagenetx.analysis.discover_slices` on the current view,
    sets the view to the mistakes of the slice ranked ``rank`` and returns
    the table of slices found."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="discover_slices",
            label="ImageNet-X: discover the slices where a model fails",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        from imagenetx.analysis import analysis_options

        inputs = types.Object()
        fields = prediction_fields_or_warning(ctx, inputs)
        if not fields:
            return types.Property(inputs)
        inputs.enum("pred_field", fields, required=True, default=fields[0],
                    label="Prediction field", view=types.DropdownView())
        options = analysis_options(ctx.dataset)
        inputs.enum("correct", options["label_spaces"],
                    default=options["default_correct"], label="Correct if",
                    view=types.RadioGroup())
        if "real" in options["label_spaces"]:
            inputs.enum("real_mode", list(REAL_MODES), default="clean",
                        label="Empty ReaL sets (correct = real)",
                        view=types.RadioGroup())
        inputs.int("max_order", default=DISCOVERY_MAX_ORDER,
                   label="Most slices per conjunction")
        inputs.int("min_support", default=DISCOVERY_MIN_SUPPORT,
                   label="Fewest images per slice")
        inputs.int("top_k", default=DISCOVERY_TOP_K, label="Slices to list")
        inputs.int("rank", default=1, label="Show the mistakes of slice #")
        return types.Property(inputs, view=types.View(label="Discover slices"))

    def execute(self, ctx):
        from imagenetx.analysis import discover_slices
        from imagenetx.present.formatting import format_discovery

        p = ctx.params
        result = discover_slices(
            ctx.view, p["pred_field"], max_order=p.get("max_order") or DISCOVERY_MAX_ORDER,
            min_support=p.get("min_support") or DISCOVERY_MIN_SUPPORT,
            top_k=p.get("top_k") or DISCOVERY_TOP_K,
            correct=p.get("correct") or None, real_mode=p.get("real_mode") or "clean")
        out = {"table": format_discovery(result.to_dict()), "count": 0}
        if result.slices:
            view = result.mistakes_view(min(p.get("rank") or 1, len(result.slices)))
            ctx.ops.set_view(view)
            out["count"] = view.count()
        return out

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("table", label="Slices found (the view shows the chosen one's mistakes)",
                    view=types.CodeView())
        return types.Property(outputs)
