"""Form pieces shared by the operators: scoring prediction fields, building
datasets, and the library's errors in the App's words (the forms' labels,
the operators' labels)."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from imagenetx.cli import command_parser
from imagenetx.cli.base import command_for
from imagenetx.errors import Call, Term, parameters_in, render_calls, render_parameters
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


def add_pred_field_input(ctx, inputs) -> list:
    """The Prediction field dropdown of the operators that look at one
    model; returns the dataset's prediction fields (none: a warning instead,
    and the form ends there)."""
    fields = prediction_fields_or_warning(ctx, inputs)
    if fields:
        inputs.enum("pred_field", fields, required=True, default=fields[0],
                    label="Prediction field", view=types.DropdownView())
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
    add_correct_inputs(inputs, options)
    return options


def add_correct_inputs(inputs, options: dict) -> None:
    """What counts as correct (the benchmark's label spaces, from
    :func:`imagenetx.analysis.analysis_options`), and ReaL's empty sets."""
    inputs.enum("correct", options["label_spaces"],
                default=options["default_correct"], label="Correct if",
                view=types.RadioGroup())
    if "real" in options["label_spaces"]:
        inputs.enum("real_mode", list(REAL_MODES), default="clean",
                    label="Empty ReaL sets (correct = real)",
                    view=types.RadioGroup())


def mode_params(ctx) -> dict:
    """The values of :func:`add_mode_inputs`, as library keyword args."""
    return {
        "slicing": ctx.params.get("slicing") or None,
        "correct": ctx.params.get("correct") or None,
        "real_mode": ctx.params.get("real_mode") or "clean",
    }


def built_dataset_result(dataset, summary, **extra) -> dict:
    """The result of an operator that built a dataset: its name and summary
    (``dataset`` in the result of :func:`run_with_progress`'s ``finish``
    makes the App open it)."""
    return {"dataset": dataset.name, "summary": str(summary), **extra}


def is_large(samples_of, ctx, limit: int) -> bool:
    """Whether ``samples_of(ctx)`` holds more than ``limit`` samples (False
    while the context has no dataset yet)."""
    try:
        return len(samples_of(ctx)) > limit
    except Exception:  # no dataset in the context yet
        return False


#: the one command that gives the App a worker for delegated operations
APP_COMMAND = "imagenetx app --dataset NAME"


def delegation_enabled() -> bool:
    """Whether this App can schedule delegated operations: FiftyOne's
    open-source App offers "Schedule" only with
    ``FIFTYONE_ALLOW_LEGACY_ORCHESTRATORS=true`` (``imagenetx app`` sets it)."""
    import fiftyone as fo

    return bool(fo.config.allow_legacy_orchestrators)


def delegate_above(default: int) -> int:
    """The size above which a long job runs in the background by default:
    ``IMAGENETX_DELEGATE_ABOVE`` when set, else ``default``."""
    import os

    try:
        return int(os.environ.get("IMAGENETX_DELEGATE_ABOVE") or default)
    except ValueError:
        return default


def add_delegate_input(ctx, inputs, large: bool, above: int, unit: str) -> None:
    """The "Delegate" checkbox of the operators that run long jobs, and what
    the user needs to know about it: where background runs are not set up,
    no checkbox and a note that the job runs here with progress; where no
    worker runs, a warning naming the command that starts one."""
    from imagenetx.app.workers import worker_running

    if not delegation_enabled():
        if large:
            inputs.view("delegate_note", types.Notice(
                label="Runs here, with progress, while this form waits",
                description=(
                    "Background runs are not set up in this App. To run long "
                    f"jobs in the background, open the App with `{APP_COMMAND}` "
                    "(it starts a worker beside the App)."),
            ))
        return
    inputs.bool(
        "delegate", label="Delegate", default=large,
        description=(f"run in the background (default above {above:,} {unit})"))
    if delegation(ctx, large) and not worker_running():
        inputs.view("worker_note", types.Warning(
            label="No worker runs: the job waits in the queue",
            description=("Start one with `fiftyone delegated launch` (in this "
                         f"environment), or open the App with `{APP_COMMAND}`."),
        ))


def delegation(ctx, default: bool) -> bool:
    """The delegation the form asked for, else ``default``; never where this
    App cannot schedule (the job then runs immediately, with progress)."""
    if not delegation_enabled():
        return False
    delegate = ctx.params.get("delegate")
    return default if delegate is None else bool(delegate)


def _progress_label(pb) -> str:
    label = getattr(pb, "label", None)  # a job's own words (Hub pulls: shards, images)
    return label or f"{pb.iteration:,} of {pb.total:,} images"


def progress_reporter(ctx):
    """The library's ``progress=`` argument that reports a delegated run's
    progress to FiftyOne, at most once a second."""
    import fiftyone.core.utils as fou

    def report(pb):
        ctx.set_progress(progress=pb.progress, label=_progress_label(pb))
    return fou.report_progress(report, dt=1.0)


def run_with_progress(ctx, job, finish):
    """Runs a long job with the progress the App can show.

    Delegated: runs ``job(progress)`` and returns ``finish(result)`` (FiftyOne
    records the progress with the run). Immediate: returns a generator that
    the App streams (no operator time-out applies to it): the job runs in a
    thread while the generator yields progress bar updates, then
    ``ctx.trigger("reload_dataset")`` (or, when the result names a
    ``dataset`` the job built, the request that opens it) and the output of
    ``finish(result)``: a streamed operator's requests reach the App only
    as yielded messages.
    A user mistake (:class:`ImageNetXError`), or a full disk, ends as one
    message either way (:func:`imagenetx.disk.user_error_of`).

    Args:
        ctx: the execution context
        job: ``job(progress) -> result``, ``progress`` being the library's
            ``progress=`` argument
        finish: ``finish(result) -> dict``, the operator's result
    """
    from imagenetx.disk import user_error_of

    def finish_in_form(result):  # a summary's advice, as the form words it
        out = finish(result)
        if isinstance(out.get("summary"), str):
            out["summary"] = _in_operator_form(ctx, out["summary"])
        return out

    if ctx.delegated:
        try:
            return finish_in_form(job(progress_reporter(ctx)))
        except Exception as e:
            error = user_error_of(e)
            if error is None:
                raise
            return user_error(ctx, error)
    return _stream(ctx, job, finish_in_form)


def _stream(ctx, job, finish):
    import queue
    import threading

    import fiftyone.core.utils as fou

    from imagenetx.disk import user_error_of

    updates = queue.Queue()
    outcome = {}

    def run():
        try:
            outcome["result"] = job(fou.report_progress(
                lambda pb: updates.put((pb.progress, _progress_label(pb))), dt=1.0))
        except BaseException as e:  # handed to the generator
            outcome["error"] = e
        finally:
            updates.put(None)

    threading.Thread(target=run, name="imagenetx-job", daemon=True).start()
    yield ctx.ops.set_progress(label="starting", variant="linear")
    while (update := updates.get()) is not None:
        yield ctx.ops.set_progress(progress=update[0], label=update[1],
                                   variant="linear")
    error = outcome.get("error")
    shown = user_error_of(error) if error is not None else None
    if shown is not None:
        result = {"summary": _in_operator_form(ctx, str(shown))}
        yield ctx.ops.notify(result["summary"], variant="error")
    elif error is not None:
        raise error
    else:
        result = finish(outcome["result"])
        if result.get("dataset"):  # a dataset the job built: open it
            yield ctx.ops.open_dataset(result["dataset"])
        else:
            yield ctx.trigger("reload_dataset")
    yield ctx.ops.show_output(_summary_output().to_json(), result)


def _summary_output():
    outputs = types.Object()
    outputs.str("summary", label="Result")
    return types.Property(outputs)


def form_term(inputs) -> Term:
    """The App's words for the library's parameters (:mod:`imagenetx.errors`),
    from a form's own inputs: ``field`` as its label ("Prediction field"),
    ``eps=4/255`` as "Epsilon 4/255", ``overwrite=True`` as "Overwrite
    (ticked)". A parameter the form has no labelled input for keeps the
    library's words."""
    properties = getattr(inputs, "properties", None) or {}

    def term(parameter):
        prop = properties.get(parameter.name)
        label = getattr(getattr(prop, "view", None), "label", None)
        if not label:
            return None
        value = parameter.bare_value
        if value is None:
            return label
        if isinstance(prop.type, types.Boolean):
            return f"{label} ({'ticked' if value == 'True' else 'unticked'})"
        return f"{label} {value}"
    return term


def in_form(text: str, inputs) -> str:
    """A library error or summary with each call it names as its operator
    (:func:`operator_for`) and each parameter as the form's label
    (:func:`form_term`)."""
    return render_parameters(render_calls(text, operator_for), form_term(inputs))


def _plugin_operator(name: str):
    from imagenetx.app.install import PLUGIN_NAME

    try:
        return foo.get_operator(f"{PLUGIN_NAME}/{name}")
    except Exception:  # the plugin not registered here: the operator's name
        return None


def operator_for(call: Call, ctx=None):
    """The App's words for a call a message names (:mod:`imagenetx.errors`):
    its operator's label in quotes, with its arguments as that operator's
    form labels where ``ctx`` can build the form ("ImageNet-X: run a model"
    with Logits (ticked)); a call no operator makes, as the command line
    names it (`` `imagenetx probe spectral --field r50` ``). None for a
    call not in :data:`imagenetx.errors.CALLS`."""
    door = call.door
    if door is None:
        return None
    if door.operator is None:
        return command_for(call, command_parser)
    operator = _plugin_operator(door.operator)
    label = f'"{operator.config.label if operator else door.operator}"'
    if not call.arguments:
        return label
    term = form_term(operator_form(ctx, operator) if ctx is not None and operator else None)
    return label + " with " + ", ".join(term(p) or f"{p.name}={p.value}"
                                        for p in call.arguments)


def in_app(text: str, ctx=None) -> str:
    """A library message shown outside a form (a panel): each call it
    names as its operator (:func:`operator_for`)."""
    return render_calls(text, lambda call: operator_for(call, ctx))


def operator_form(ctx, operator=None):
    """The inputs of the form of ``operator`` (default: the one ``ctx``
    runs), as its ``resolve_input`` builds them for ``ctx``'s values; None
    where it has none or it cannot be built."""
    try:
        operator = operator or foo.get_operator(ctx.operator_uri)
        form = operator.resolve_input(ctx)
    except Exception:  # no form to take labels from: the library's words
        return None
    return getattr(form, "type", None)


def _in_operator_form(ctx, text: str, operator=None) -> str:
    text = in_app(text, ctx)
    if not parameters_in(text):  # nothing to look up: no form built
        return text
    return render_parameters(text, form_term(operator_form(ctx, operator)))


def user_error(ctx, error, operator=None) -> dict:
    """An operator's result for a user mistake: one line in the terms of
    the operator's form (:func:`form_term`), also shown as a notification
    (no traceback)."""
    message = _in_operator_form(ctx, str(error), operator)
    if not ctx.delegated:
        ctx.ops.notify(message, variant="error")
    return {"summary": message, "error": message}


def user_errors(execute):
    """Decorates an operator's ``execute``: a user mistake
    (:class:`ImageNetXError`), or a full disk, becomes :func:`user_error`'s
    result."""
    import functools

    @functools.wraps(execute)
    def wrapper(self, ctx):
        from imagenetx.disk import user_error_of

        try:
            return execute(self, ctx)
        except Exception as e:
            error = user_error_of(e)
            if error is None:
                raise
            return user_error(ctx, error, self)
    return wrapper


def invalid(inputs, name: str, message) -> None:
    """Marks the form invalid (Execute disabled) with one line: ``message``,
    or a library error in the form's labels (:func:`in_form`)."""
    prop = inputs.view(name, types.Error(label=in_form(str(message), inputs)))
    prop.invalid = True
