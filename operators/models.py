"""The form the operators that run a model share (Run model, Attack a
model): the Model picker with its zero-shot section, a checkpoint's
Architecture and Remap, the check of the spec before Execute, the field to
write, the pipeline's options, and the run itself with its progress."""

import fiftyone.operators.types as types

from imagenetx.options import DEVICES
from imagenetx.protocols import protocol_names
from imagenetx.protocols.robustbench import PREPROCESSING_CHOICES

from .forms import (
    add_delegate_input,
    delegate_above,
    invalid,
    is_large,
    run_with_progress,
)


def add_model_picker(ctx, inputs):
    """The Model input: suggestions for what is typed (timm, open_clip,
    Hugging Face and zoo ids), free text for anything else; a zero-shot
    section for zero-shot models."""
    from imagenetx.models.catalog import is_zero_shot, suggest_specs

    model = ctx.params.get("model") or ""
    choices = types.AutocompleteView(allow_user_input=True)
    for spec in suggest_specs(model):
        choices.add_choice(spec, label=spec)
    inputs.str(
        "model", label="Model", required=True, view=choices,
        description="type to search: timm:NAME, torchvision:NAME[:WEIGHTS], "
                    "checkpoint:PATH, open_clip:ARCH/PRETRAINED, hf:ORG/NAME, zoo:NAME",
    )
    if is_zero_shot(model):
        inputs.view("zero_shot_header", types.Header(
            label="Zero-shot classifier",
            description="The head is built from prompts over the benchmark's classes "
                        "(ImageNet's 1000, ImageNet-D's 113), once per model and prompts",
            divider=True))
        inputs.str("templates", label="Prompt templates",
                   description="empty or openai: OpenAI's 80, as OpenCLIP reports "
                               "ImageNet; simple; or a file on the server with one "
                               "template per line, each with {c}")
        inputs.str("prompt", label="Prompt",
                   description='one prompt instead of the templates, with {c} for the '
                               'class name, e.g. "A photo of a {c}" (ImageNet-D)')


def model_params(params: dict) -> dict:
    """The form's values as the library takes them: the zero-shot section's
    only for a zero-shot model (a hidden section keeps its old values), a
    Prompt instead of the templates."""
    from imagenetx.models.catalog import is_zero_shot

    p = dict(params)
    if not is_zero_shot(p.get("model") or ""):
        p["templates"] = p["prompt"] = None
    elif p.get("prompt"):
        p["templates"] = None
    return p


def add_protocol_input(inputs, default=None, description=None, ctx=None):
    """The Protocol: a paper's setting by name (``--protocol``), and
    RobustBench's Preprocessing by name (``--preprocessing``), checked as
    the library checks them when ``ctx`` is given."""
    inputs.enum("protocol", protocol_names(), label="Protocol", default=default,
                view=types.DropdownView(), description=description or (
                    "a paper's setting as its authors ran it (`imagenetx protocols`); "
                    "empty: the dataset's benchmark's own (imagenet-d on ImageNet-D, "
                    "model-vs-human on cue conflict); none: the model's own "
                    "preprocessing; settings given on top are recorded as departures"))
    inputs.enum("preprocessing", list(PREPROCESSING_CHOICES), label="Preprocessing",
                view=types.DropdownView(), description=(
                    "with the robustbench Protocol: RobustBench's preprocessing by name; "
                    "empty: the leaderboard entry's own (a checkpoint named after its "
                    "entry), else Res256Crop224, recorded as the departure "
                    "'preprocessing not named'"))
    if ctx is not None:
        _check_run_options(ctx, inputs, default)


def _check_run_options(ctx, inputs, protocol_default=None):
    """The Protocol and Preprocessing as :class:`RunOptions` takes them; one
    error line and Execute disabled if not."""
    from imagenetx.errors import ImageNetXError
    from imagenetx.models.config import RunOptions

    p = ctx.params
    try:
        RunOptions(protocol=p.get("protocol") or protocol_default,
                   preprocessing=p.get("preprocessing") or None).check()
    except ImageNetXError as e:
        invalid(inputs, "options_error", e)


def check_spec(ctx, inputs):
    """The Model (with its Architecture, Remap and prompts) as the library
    would take it; one error line and Execute disabled if not."""
    from imagenetx.errors import ImageNetXError
    from imagenetx.models.sources import ModelRequest, check_request

    p = model_params(ctx.params)
    model = p.get("model")
    if not model:
        return
    try:
        check_request(model, ModelRequest(
            arch=p.get("arch") or None, remap_by_position=bool(p.get("remap_by_position")),
            templates=p.get("templates") or None, prompt=p.get("prompt") or None))
    except ImageNetXError as e:
        invalid(inputs, "spec_error", e)


def add_checkpoint_inputs(inputs):
    """The Architecture and Remap inputs that checkpoint: specs need."""
    inputs.str(
        "arch", label="Architecture",
        description="checkpoint: specs only: a timm name, torchvision:NAME or "
                    "open_clip:ARCH",
    )
    inputs.bool(
        "remap_by_position", label="Remap checkpoint keys by position",
        default=False,
        description=(
            "checkpoint: specs only: when its key names differ from the "
            "architecture's but its tensors line up one to one in order "
            "and shape, load them by position"
        ),
    )


def check_field(ctx, inputs):
    """The field to write (``field``): a top-level name, not the ground
    truth, and classifications if it exists (its error in its input's label)."""
    from imagenetx.errors import ImageNetXError
    from imagenetx.store.schema import check_prediction_field

    field = ctx.params.get("field")
    if not field or ctx.dataset is None:
        return
    try:
        check_prediction_field(ctx.dataset, field,
                               ctx.params.get("gt_field") or "ground_truth")
    except ImageNetXError as e:
        invalid(inputs, "field_error", e)


def add_model_inputs(ctx, inputs, field_label: str = "Prediction field",
                     field_description: str = None) -> None:
    """The Model picker, a checkpoint's inputs and the field to write, each
    checked (its error line under it, Execute disabled)."""
    add_model_picker(ctx, inputs)
    add_checkpoint_inputs(inputs)
    check_spec(ctx, inputs)
    inputs.str("field", label=field_label, required=True, description=field_description)
    check_field(ctx, inputs)


def add_device_inputs(inputs) -> None:
    """Batch size, decoding workers and device of the prediction pipeline."""
    inputs.int("batch_size", label="Batch size", min=1,
               description="images per forward pass (empty: 256 on a GPU, 64 on the CPU)")
    inputs.int("num_workers", label="Decoding workers",
               description="image decoding processes (empty: one per CPU core this "
                           "process may use)")
    inputs.enum("device", list(DEVICES), label="Device", default="auto",
                view=types.DropdownView())


def add_samples_inputs(ctx, inputs, verb: str, done: str, gt_description: str = None,
                       delegate_default: int = 2000) -> None:
    """Which samples a model run takes: the group slices (on a grouped
    dataset), a limit, whether to redo those ``done``, the ground truth, and
    whether to run in the background; ``verb`` is what the run does to
    them (``predict``, ``attack``)."""
    if ctx.dataset is not None and ctx.dataset.media_type == "group":
        inputs.list("slices", types.String(), label="Group slices",
                    description=f"{verb} only these group slices (empty: all)")
    inputs.int("limit", label="Limit",
               description=f"{verb} at most N samples (a resumed run: N more)")
    inputs.bool("overwrite", label="Overwrite", default=False,
                description=f"also {verb} samples that already have {done}")
    inputs.str("gt_field", label="Ground truth field", default="ground_truth",
               description=gt_description)
    above = delegate_above(delegate_default)
    add_delegate_input(ctx, inputs, target_is_large(ctx, above), above, "samples")


def target_is_large(ctx, above: int) -> bool:
    """Whether the operator's target view holds more than ``above`` samples."""
    return is_large(lambda c: c.target_view(), ctx, above)


def run_model(ctx, run, finish):
    """Runs a model task over the target view, with progress.

    Args:
        ctx: the execution context
        run: ``run(view, model, field, request, options, gt_field=...,
            progress=..., slices=...) -> summary``
        finish: ``finish(summary) -> dict``, what the run returns beyond
            :func:`summary_result`
    """
    from imagenetx.models.config import from_params

    p = ctx.params

    def job(progress):
        request, options = from_params(model_params(p))
        return run(ctx.target_view(), p["model"], p["field"], request, options, gt_field=p.get("gt_field") or "ground_truth",
                   progress=progress, slices=p.get("slices") or None)

    return run_with_progress(ctx, job, lambda summary: {**summary_result(summary),
                                                        **finish(summary)})


def summary_result(summary) -> dict:
    """What every model run returns: the summary in words with the field's
    comparability line, the samples predicted and failed, and the
    evaluation key."""
    from imagenetx.present.protocols import run_summary

    return {"summary": run_summary(summary), "predicted": summary.predicted,
            "failed": summary.failed, "eval_key": summary.eval_key}
