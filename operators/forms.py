"""Form pieces shared by the operators that score prediction fields."""

import fiftyone.operators.types as types

from imagenetx.options import CORRECTNESS, REAL_MODES, WHICH


def prediction_fields_or_warning(ctx, inputs) -> list:
    """The dataset's prediction fields; when there are none, adds a warning
    to the form instead."""
    from imagenetx.store.schema import prediction_fields

    fields = prediction_fields(ctx.dataset) if ctx.dataset else []
    if not fields:
        inputs.view("none", types.Warning(
            label="No prediction fields",
            description="Run a model or import predictions first."))
    return fields


def add_mode_inputs(inputs):
    """The factor labels and correctness of the error-ratio engine."""
    inputs.enum("which", list(WHICH), default="top",
                label="Factor labels", view=types.RadioGroup())
    inputs.enum("correct", list(CORRECTNESS),
                default="class", label="Correct if", view=types.RadioGroup())
    inputs.enum("real_mode", list(REAL_MODES), default="clean",
                label="Empty ReaL sets (correct = real)",
                view=types.RadioGroup())


def mode_params(ctx) -> dict:
    """The values of :func:`add_mode_inputs`, as library keyword args."""
    return {
        "which": ctx.params.get("which", "top"),
        "correct": ctx.params.get("correct", "class"),
        "real_mode": ctx.params.get("real_mode", "clean"),
    }
