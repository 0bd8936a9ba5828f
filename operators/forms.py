"""Form pieces shared by the operators: scoring prediction fields, building
datasets."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from imagenetx.options import REAL_MODES


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


def add_mode_inputs(ctx, inputs) -> dict:
    """The slicing and correctness of the analysis engine, as the dataset's
    benchmark offers them; returns :func:`imagenetx.analysis.analysis_options`
    (with the values of the chosen slicing)."""
    from imagenetx.analysis import analysis_options

    options = analysis_options(ctx.dataset, values_of=ctx.params.get("slicing") or None)
    slicings = list(options["slicings"])
    inputs.enum("slicing", slicings, default=options["default_slicing"],
                label="Slice by", view=types.DropdownView())
    inputs.enum("correct", options["label_spaces"],
                default=options["default_correct"], label="Correct if",
                view=types.RadioGroup())
    if "real" in options["label_spaces"]:
        inputs.enum("real_mode", list(REAL_MODES), default="clean",
                    label="Empty ReaL sets (correct = real)",
                    view=types.RadioGroup())
    return options


def mode_params(ctx) -> dict:
    """The values of :func:`add_mode_inputs`, as library keyword args."""
    return {
        "slicing": ctx.params.get("slicing") or None,
        "correct": ctx.params.get("correct") or None,
        "real_mode": ctx.params.get("real_mode") or "clean",
    }


def add_new_dataset_inputs(inputs, default_name=None, description=None) -> None:
    """The dataset name and overwrite inputs of the operators that build a
    dataset."""
    inputs.str("name", default=default_name, label="Dataset name",
               description=description)
    inputs.bool("overwrite", default=False,
                label="Replace an existing dataset of that name")


def new_dataset_params(ctx) -> dict:
    """The values of :func:`add_new_dataset_inputs`, as library keyword args."""
    return {"name": ctx.params.get("name") or None,
            "overwrite": bool(ctx.params.get("overwrite"))}


def open_built_dataset(ctx, dataset, summary, **extra) -> dict:
    """Opens a dataset an operator built (unless delegated) and returns the
    operator's result: its name and summary."""
    if not ctx.delegated:
        ctx.ops.open_dataset(dataset.name)
    return {"dataset": dataset.name, "summary": str(summary), **extra}


def is_large(samples_of, ctx, limit: int) -> bool:
    """Whether ``samples_of(ctx)`` holds more than ``limit`` samples (False
    while the context has no dataset yet)."""
    try:
        return len(samples_of(ctx)) > limit
    except Exception:  # no dataset in the context yet
        return False


def add_delegate_input(inputs, default: bool, above: int, unit: str) -> None:
    """The "Delegate" checkbox of the operators that run long jobs."""
    inputs.bool(
        "delegate", label="Delegate", default=default,
        description=(f"run in the background (default above {above:,} {unit}); "
                     "needs `fiftyone delegated launch`"))


def delegation(ctx, default: bool) -> bool:
    """The delegation the form asked for, else ``default``."""
    delegate = ctx.params.get("delegate")
    return default if delegate is None else bool(delegate)


def progress_reporter(ctx):
    """The library's ``progress=`` argument that reports to the App, at most
    once a second."""
    import fiftyone.core.utils as fou

    def report(pb):
        ctx.set_progress(progress=pb.progress,
                         label=f"{pb.iteration:,} of {pb.total:,} images")
    return fou.report_progress(report, dt=1.0)


class LoadReleaseFolder(foo.Operator):
    """Base of the operators that build a dataset from a benchmark's release
    folder on the server and open it. Subclasses set the constants and
    :meth:`load`; :meth:`add_inputs` and :meth:`counts` are theirs to
    extend."""

    OPERATOR = LABEL = DESCRIPTION = FORM_TITLE = FOLDER_HELP = DEFAULT_NAME = ""
    #: whether the form is built again as its inputs change
    DYNAMIC = False

    @property
    def config(self):
        return foo.OperatorConfig(
            name=self.OPERATOR,
            label=self.LABEL,
            description=self.DESCRIPTION,
            dynamic=self.DYNAMIC,
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def add_inputs(self, ctx, inputs) -> None:
        """Inputs before the folder (none by default)."""

    def folder_help(self, ctx) -> str:
        return self.FOLDER_HELP

    def default_name(self, ctx) -> str:
        return self.DEFAULT_NAME

    def load(self, ctx, folder: str, **dataset_params) -> tuple:
        """``(dataset, summary)`` built from ``folder``."""
        raise NotImplementedError

    def resolve_input(self, ctx):
        inputs = types.Object()
        self.add_inputs(ctx, inputs)
        inputs.str("release_dir", required=True, label="Release folder",
                   description=self.folder_help(ctx))
        add_new_dataset_inputs(inputs, self.default_name(ctx))
        return types.Property(inputs, view=types.View(label=self.FORM_TITLE))

    def execute(self, ctx):
        dataset, summary = self.load(ctx, ctx.params["release_dir"],
                                     **new_dataset_params(ctx))
        return open_built_dataset(ctx, dataset, summary, **self.counts(summary))

    def counts(self, summary) -> dict:
        """What the result reports besides the summary."""
        return {"samples": summary.samples}

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)
