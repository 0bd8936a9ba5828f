"""The "Run model" operator: a form over :func:`imagenetx.models.inference.predict`."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from imagenetx.options import AMPS, DECODERS, DEVICES

from .forms import (
    add_delegate_input,
    delegate_above,
    delegation,
    in_form_terms,
    invalid,
    is_large,
    run_with_progress,
)

#: views larger than this run as delegated operations unless the form says
#: otherwise (``IMAGENETX_DELEGATE_ABOVE`` overrides it)
DELEGATE_ABOVE = 2000


class RunModel(foo.Operator):
    """Runs an ImageNet classifier over the current view and evaluates it."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="run_model",
            label="ImageNet-X: run a model",
            description=(
                "Predict ImageNet classes with a timm, torchvision, open_clip "
                "(zero-shot), Hugging Face or FiftyOne zoo model or a local "
                "checkpoint, then evaluate against the ground truth"
            ),
            dynamic=True,
            # immediate runs stream their progress (see run_with_progress)
            execute_as_generator=True,
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        _add_model_picker(ctx, inputs)
        inputs.str(
            "arch", label="Architecture",
            description="checkpoint: specs only: a timm name or torchvision:NAME",
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
        inputs.str("field", label="Prediction field", required=True)
        inputs.int("batch_size", label="Batch size", min=1,
                   description="images per forward pass (empty: 256 on a GPU, 64 on the CPU)")
        inputs.int(
            "num_workers", label="Decoding workers",
            description="image decoding processes (empty: one per CPU core this "
                        "process may use)",
        )
        inputs.enum("device", list(DEVICES), label="Device", default="auto",
                    view=types.DropdownView())
        inputs.enum("amp", list(AMPS), label="Autocast", default="auto",
                    view=types.DropdownView())
        inputs.enum("decoder", list(DECODERS), label="Decoder", default="auto",
                    view=types.DropdownView(),
                    description="who decodes the images (auto: the fastest the "
                                "model's resize allows)")
        if ctx.dataset is not None and ctx.dataset.media_type == "group":
            inputs.list("slices", types.String(), label="Group slices",
                        description="predict only these group slices (empty: all)")
        inputs.bool("compile", label="torch.compile", default=False)
        inputs.bool("logits", label="Store logits", default=False)
        inputs.int("limit", label="Limit", description="predict at most N samples")
        inputs.bool(
            "overwrite", label="Overwrite", default=False,
            description="also redo samples that already have a prediction",
        )
        inputs.str("gt_field", label="Ground truth field", default="ground_truth")
        add_delegate_input(ctx, inputs, _large(ctx), delegate_above(DELEGATE_ABOVE),
                           "samples")
        _check_spec(ctx, inputs)
        _check_field(ctx, inputs)
        return types.Property(inputs, view=types.View(label="Run model"))

    def resolve_delegation(self, ctx):
        return delegation(ctx, _large(ctx))

    def execute(self, ctx):
        from imagenetx.models.inference import run_predict
        from imagenetx.models.options import from_params

        p = ctx.params

        def job(progress):
            request, options = from_params(_model_params(p))
            return run_predict(ctx.target_view(), p["model"], p["field"], request,
                               options, gt_field=p.get("gt_field") or "ground_truth",
                               logits=bool(p.get("logits")), progress=progress,
                               slices=p.get("slices") or None)

        def finish(summary):
            return {
                "summary": str(summary),
                "predicted": summary.predicted,
                "already_predicted": summary.already_predicted,
                "failed": summary.failed,
                "eval_key": summary.eval_key,
                "accuracy": summary.accuracy,
            }

        return run_with_progress(ctx, job, finish)

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)


def _large(ctx) -> bool:
    return is_large(lambda c: c.target_view(), ctx, delegate_above(DELEGATE_ABOVE))


def _add_model_picker(ctx, inputs):
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
        inputs.str("templates", label="Prompt templates", default="openai",
                   description="openai (OpenAI's 80, as OpenCLIP reports ImageNet), "
                               "simple, or a file on the server with one template per "
                               "line, each with {c}")
        inputs.str("prompt", label="Prompt",
                   description='one prompt instead of the templates, with {c} for the '
                               'class name, e.g. "A photo of a {c}" (ImageNet-D)')


def _model_params(params: dict) -> dict:
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


def _check_spec(ctx, inputs):
    from imagenetx.errors import ImageNetXError
    from imagenetx.models.specs import parse_spec

    p = _model_params(ctx.params)
    model = p.get("model")
    if not model:
        return
    try:
        parse_spec(model, p.get("arch") or None, bool(p.get("remap_by_position")),
                   templates=p.get("templates") or None, prompt=p.get("prompt") or None)
    except ImageNetXError as e:
        invalid(inputs, "spec_error", in_form_terms(str(e)))


def _check_field(ctx, inputs):
    """The Prediction field: a top-level name, not the ground truth, and
    classifications if it exists."""
    from imagenetx.errors import ImageNetXError
    from imagenetx.store.schema import check_prediction_field

    field = ctx.params.get("field")
    if not field or ctx.dataset is None:
        return
    try:
        check_prediction_field(ctx.dataset, field,
                               ctx.params.get("gt_field") or "ground_truth")
    except ImageNetXError as e:
        invalid(inputs, "field_error", in_form_terms(str(e)))
