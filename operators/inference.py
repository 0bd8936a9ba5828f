"""The "Run model" operator: a form over :func:`imagenetx.models.inference.predict`."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from imagenetx.options import AMPS, DEVICES

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
                "Predict ImageNet classes with a timm or torchvision model or "
                "a local checkpoint, then evaluate against the ground truth"
            ),
            dynamic=True,
            # immediate runs stream their progress (see run_with_progress)
            execute_as_generator=True,
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        inputs.str(
            "model", label="Model", required=True,
            description="timm:NAME, torchvision:NAME[:WEIGHTS] or checkpoint:PATH",
        )
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
        from imagenetx.models.inference import predict

        p = ctx.params

        def job(progress):
            return predict(
                ctx.target_view(),
                p["model"],
                p["field"],
                arch=p.get("arch") or None,
                remap_by_position=bool(p.get("remap_by_position")),
                batch_size=p.get("batch_size") or None,
                num_workers=p.get("num_workers"),
                device=p.get("device") or "auto",
                amp=p.get("amp") or "auto",
                compile=bool(p.get("compile")),
                logits=bool(p.get("logits")),
                limit=p.get("limit"),
                overwrite=bool(p.get("overwrite")),
                gt_field=p.get("gt_field") or "ground_truth",
                progress=progress,
            )

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


def _check_spec(ctx, inputs):
    from imagenetx.errors import ImageNetXError
    from imagenetx.models.specs import parse_spec

    model = ctx.params.get("model")
    if not model:
        return
    try:
        parse_spec(
            model,
            ctx.params.get("arch") or None,
            bool(ctx.params.get("remap_by_position")),
        )
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
