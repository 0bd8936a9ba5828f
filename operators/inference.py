"""The "Run model" operator: a form over :func:`imagenetx.models.inference.predict`."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from imagenetx.options import AMPS, DECODERS, DEVICES

from .forms import (
    add_delegate_input,
    delegate_above,
    delegation,
    is_large,
    run_with_progress,
)
from .models import (
    add_checkpoint_inputs,
    add_model_picker,
    add_protocol_input,
    check_field,
    check_spec,
    model_params,
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
        add_model_picker(ctx, inputs)
        add_checkpoint_inputs(inputs)
        check_spec(ctx, inputs)  # its error line under the model's inputs
        inputs.str("field", label="Prediction field", required=True)
        check_field(ctx, inputs)
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
        add_protocol_input(inputs)
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
        return types.Property(inputs, view=types.View(label="Run model"))

    def resolve_delegation(self, ctx):
        return delegation(ctx, _large(ctx))

    def execute(self, ctx):
        from imagenetx.models.inference import run_predict
        from imagenetx.models.options import from_params

        p = ctx.params

        def job(progress):
            request, options = from_params(model_params(p))
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
