"""The "Export the HTML report" operator."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import (
    add_mode_inputs,
    invalid,
    mode_params,
    prediction_fields_or_warning,
    user_errors,
)


class ExportReport(foo.Operator):
    """Writes the HTML report (and its CSV tables) of prediction fields over
    the current view."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="export_report",
            label="ImageNet-X: export the HTML report",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        import os

        inputs = types.Object()
        fields = prediction_fields_or_warning(ctx, inputs)
        if not fields:
            return types.Property(inputs)
        inputs.list("pred_fields", types.String(), required=True,
                    default=fields[:4], label="Prediction fields",
                    view=types.AutocompleteView(choices=[
                        types.Choice(f, label=f) for f in fields]))
        from imagenetx.app.address import app_is_local
        from imagenetx.app.report_folder import reports_dir

        where = "" if app_is_local() else (
            f" (this App is reachable from other machines: it writes under {reports_dir()})")
        if where:
            os.makedirs(reports_dir(), exist_ok=True)
        inputs.str("out", required=True, label="HTML file",
                   description="path of the page; CSV tables go beside it" + where)
        add_mode_inputs(ctx, inputs)
        _check(ctx, inputs)
        return types.Property(inputs, view=types.View(label="Export report"))

    @user_errors
    def execute(self, ctx):
        import os

        from imagenetx.errors import ImageNetXError
        from imagenetx.app.report_folder import report_path_refusal
        from imagenetx.present.report import write_report

        refusal = report_path_refusal(ctx.params["out"])
        if refusal:
            raise ImageNetXError(refusal)

        summary = write_report(
            ctx.view,
            ctx.params["pred_fields"],
            os.path.expanduser(ctx.params["out"]),
            **mode_params(ctx),
        )
        return {"html": summary.html, "csvs": summary.csvs,
                "summary": str(summary)}

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)


def _check(ctx, inputs) -> None:
    """At least one field; the HTML file is an .html page in a folder that
    exists and the server can write (what
    :func:`imagenetx.present.report.write_report` accepts)."""
    import os

    if ctx.params.get("pred_fields") == []:
        invalid(inputs, "fields_error", "Prediction fields: pick at least one")
        return
    from imagenetx.app.report_folder import report_path_refusal

    out = ctx.params.get("out")
    if not out:
        return
    refusal = report_path_refusal(out)
    if refusal:
        invalid(inputs, "out_error", refusal)
        return
    out = os.path.expanduser(out)
    if os.path.isdir(out):
        invalid(inputs, "out_error", f"HTML file '{out}' is a folder: name the page, "
                f"e.g. {os.path.join(out, 'report.html')}")
        return
    if not out.lower().endswith((".html", ".htm")):
        invalid(inputs, "out_error", f"HTML file '{out}' is not an .html path: name "
                f"the page, e.g. {os.path.splitext(out)[0]}.html")
        return
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        invalid(inputs, "out_error", f"HTML file '{out}': the folder '{folder}' does "
                "not exist on the server; create it or choose another folder")
    elif not os.access(folder, os.W_OK):
        invalid(inputs, "out_error", f"HTML file '{out}': the server cannot write "
                f"in '{folder}'; choose another folder")
