"""The "Discover slices" operator: the conjunctions of slices where a model
fails most, and the mistakes of one of them as the App's view."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from imagenetx.options import DISCOVERY_MAX_ORDER, DISCOVERY_MIN_SUPPORT, DISCOVERY_TOP_K

from .forms import add_correct_inputs, add_pred_field_input, invalid, user_errors


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
        if not add_pred_field_input(ctx, inputs):
            return types.Property(inputs)
        add_correct_inputs(inputs, analysis_options(ctx.dataset))
        inputs.int("max_order", default=DISCOVERY_MAX_ORDER,
                   label="Most slices per conjunction")
        inputs.int("min_support", default=DISCOVERY_MIN_SUPPORT,
                   label="Fewest images per slice")
        inputs.int("top_k", default=DISCOVERY_TOP_K, label="Slices to list")
        inputs.int("rank", default=1, label="Show the mistakes of slice #")
        _check_numbers(ctx, inputs)
        return types.Property(inputs, view=types.View(label="Discover slices"))

    @user_errors
    def execute(self, ctx):
        from imagenetx.analysis import discover_slices
        from imagenetx.present.formatting import discovery_rows, format_discovery

        p = ctx.params
        result = discover_slices(
            ctx.view, p["pred_field"], max_order=p.get("max_order") or DISCOVERY_MAX_ORDER,
            min_support=p.get("min_support") or DISCOVERY_MIN_SUPPORT,
            top_k=p.get("top_k") or DISCOVERY_TOP_K,
            correct=p.get("correct") or None, real_mode=p.get("real_mode") or "clean")
        found = result.to_dict()
        # the text table's heading lines say what was searched and how
        out = {"summary": "\n\n".join(format_discovery(found).split("\n")[:2]),
               "slices": [_row(i, r) for i, r in enumerate(discovery_rows(found), 1)],
               "count": 0}
        if result.slices:
            rank = min(p.get("rank") or 1, len(result.slices))
            view = result.mistakes_view(rank)
            ctx.ops.set_view(view)
            out["count"] = view.count()
            out["showing"] = (f"The view shows the {out['count']:,} mistakes of "
                              f"slice #{rank}, {found['slices'][rank - 1]['slice']}.")
        else:
            out["showing"] = "No slice found: the view is unchanged."
        return out

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Searched", view=types.MarkdownView())
        outputs.str("showing", label="View")
        table = types.TableView()
        for key, label in COLUMNS:
            table.add_column(key, label=label)
        outputs.list("slices", types.Object(), label="Slices found", view=table)
        return types.Property(outputs)


def _check_numbers(ctx, inputs) -> None:
    p = ctx.params
    for name, label, default in (("max_order", "Most slices per conjunction", DISCOVERY_MAX_ORDER),
                                 ("min_support", "Fewest images per slice", DISCOVERY_MIN_SUPPORT),
                                 ("top_k", "Slices to list", DISCOVERY_TOP_K),
                                 ("rank", "Show the mistakes of slice #", 1)):
        value = p.get(name)
        if value is not None and value < 1:
            invalid(inputs, f"{name}_error", f"{label} must be 1 or more (it is {value})")
            return
    rank, top_k = p.get("rank") or 1, p.get("top_k") or DISCOVERY_TOP_K
    if rank > top_k:
        invalid(inputs, "rank_error", f"Show the mistakes of slice # {rank}: only "
                f"{top_k} slices are listed (Slices to list)")


#: the columns of the slices table: row key, heading
COLUMNS = (("rank", "#"), ("slice", "slice"), ("n", "images"),
           ("errors", "errors"), ("error", "error"), ("error_ratio", "error ratio"),
           ("interval", "interval"), ("p_adjusted", "p adj."))


def _row(rank: int, row: dict) -> dict:
    """A slice as the table's text cells."""
    def num(x, spec):
        return "n/a" if x is None else format(x, spec)

    return {"rank": str(rank), "slice": row["slice"], "n": f"{row['n']:,}",
            "errors": f"{row['errors']:,}", "error": num(row["error"], ".3f"),
            "error_ratio": num(row["error_ratio"], ".2f"),
            "interval": f"[{num(row['ci_low'], '.2f')}, {num(row['ci_high'], '.2f')}]",
            "p_adjusted": num(row["p_adjusted"], ".1e")}
