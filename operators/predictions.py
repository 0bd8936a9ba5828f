"""The "Import predictions" operator: a form over
:func:`imagenetx.models.prediction_files.import_predictions`."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from imagenetx.options import ROW_ORDERS

from .forms import invalid, user_errors


class ImportPredictions(foo.Operator):
    """Writes a model's predictions from a file onto the current dataset."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="import_predictions",
            label="ImageNet-X: import predictions",
            description=(
                "Write a model's predictions from an imagenet_x toolkit CSV "
                "or an ImageNet-testbed logits pickle, matched by file name"
            ),
            dynamic=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        inputs.str(
            "path", label="Prediction file", required=True,
            description=(
                "a CSV with file_name,predicted_class,predicted_probability "
                "or a .pickle holding {'model', 'logits': N x 1000}, on the "
                "server's disk"
            ),
        )
        inputs.str("field", label="Prediction field", required=True)
        inputs.bool(
            "overwrite", label="Overwrite", default=False,
            description="replace the field if it already holds predictions",
        )
        inputs.enum(
            "row_order", list(ROW_ORDERS), label="Pickle row order",
            default="toolkit", view=types.DropdownView(),
            description=(
                "pickles without file names: the imagenet_x toolkit's order "
                "(by class, then file name) or file-number order"
            ),
        )
        _check(ctx, inputs)
        return types.Property(
            inputs, view=types.View(label="Import predictions")
        )

    @user_errors
    def execute(self, ctx):
        from imagenetx.models.prediction_files import import_predictions

        p = ctx.params
        summary = import_predictions(
            ctx.dataset,
            p["path"],
            p["field"],
            overwrite=bool(p.get("overwrite")),
            row_order=p.get("row_order") or "toolkit",
        )
        ctx.trigger("reload_dataset")
        return {
            "summary": str(summary),
            "rows": summary.rows,
            "samples_written": summary.samples_written,
            "rows_not_in_dataset": summary.rows_not_in_dataset,
            "samples_without_row": summary.samples_without_row,
        }

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)


def _check(ctx, inputs) -> None:
    """The file exists on the server; the field is new, or Overwrite is
    ticked."""
    import os

    from imagenetx.errors import ImageNetXError
    from imagenetx.store.schema import check_prediction_field

    path, field = ctx.params.get("path"), ctx.params.get("field")
    if path and not os.path.isfile(os.path.expanduser(path)):
        invalid(inputs, "path_error", f"Prediction file '{path}' is not a file on the "
                "server: give the path of a .csv or .pickle there")
        return
    if not field or ctx.dataset is None:
        return
    try:
        exists = check_prediction_field(ctx.dataset, field, "ground_truth")
    except ImageNetXError as e:
        invalid(inputs, "field_error", e)
        return
    if exists and not ctx.params.get("overwrite") and ctx.dataset.count(f"{field}.label"):
        invalid(inputs, "field_error", f"Prediction field '{field}' already holds "
                "predictions: tick Overwrite to replace them, or choose another "
                "Prediction field")
