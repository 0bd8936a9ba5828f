"""The "Run model" operator: a form over :func:`imagenetx.models.predict.predict`."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from imagenetx.options import AMPS, DECODERS

from .forms import delegate_above, delegation
from .models import (
    add_device_inputs,
    add_model_inputs,
    add_protocol_input,
    add_samples_inputs,
    run_model,
    target_is_large,
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
        add_model_inputs(ctx, inputs)
        add_device_inputs(inputs)
        inputs.enum("amp", list(AMPS), label="Autocast", default="auto",
                    view=types.DropdownView(),
                    description="auto: the protocol's pinned precision where it pins one, "
                                "else bf16 on CUDA, off on CPU; another than the pinned one "
                                "is recorded as a departure")
        add_protocol_input(inputs, ctx=ctx)
        inputs.enum("decoder", list(DECODERS), label="Decoder", default="auto",
                    view=types.DropdownView(),
                    description="who decodes the images (auto: the fastest the "
                                "model's resize allows)")
        inputs.bool("compile", label="torch.compile", default=False)
        inputs.bool("logits", label="Store logits", default=False)
        add_samples_inputs(ctx, inputs, "predict", "a prediction",
                           delegate_default=DELEGATE_ABOVE)
        return types.Property(inputs, view=types.View(label="Run model"))

    def resolve_delegation(self, ctx):
        return delegation(ctx, target_is_large(ctx, delegate_above(DELEGATE_ABOVE)))

    def execute(self, ctx):
        from imagenetx.models.predict import predict

        logits = bool(ctx.params.get("logits"))

        def run(view, model, field, request, options, **kw):
            return predict(view, model, field, logits=logits, request=request,
                           options=options, **kw)

        return run_model(
            ctx, run,
            lambda s: {"already_predicted": s.already_predicted, "accuracy": s.accuracy})

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)

