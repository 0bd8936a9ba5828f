"""The "Attack a model" operator: a form over
:func:`imagenetx.attacks.run.run_attack`, as ``imagenetx attack``."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from imagenetx.options import DEVICES

from .forms import (
    add_delegate_input,
    delegate_above,
    delegation,
    in_form_terms,
    invalid,
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
#: otherwise (``IMAGENETX_DELEGATE_ABOVE`` overrides it): an attack costs
#: tens of forward and backward passes per image
DELEGATE_ABOVE = 200


class AttackModel(foo.Operator):
    """Attacks a classifier on the current view's images and stores the
    adversarial predictions (with ``flipped``), evaluated: their accuracy is
    the robust accuracy."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="run_attack",
            label="ImageNet-X: attack a model",
            description=(
                "Adversarial robustness (PGD, FGSM, AutoAttack): adversarial "
                "predictions per image, robust accuracy, adversarial error "
                "ratios per factor"
            ),
            dynamic=True,
            execute_as_generator=True,
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        from imagenetx.attacks.settings import ATTACKS, NORMS

        inputs = types.Object()
        add_model_picker(ctx, inputs)
        add_checkpoint_inputs(inputs)
        check_spec(ctx, inputs)  # each error line under its inputs
        inputs.str("field", label="Adversarial field", required=True,
                   description="the adversarial prediction field to write, e.g. r50_pgd")
        check_field(ctx, inputs, "Adversarial field")
        add_protocol_input(inputs, default="gavrikov", description=(
            "gavrikov: PIL Resize 256 + CenterCrop 224, PGD-40 L∞ at 0.5/255, step "
            "2/255, as Gavrikov & Keuper; robustbench: AutoAttack standard L∞ at 4/255 "
            "on RobustBench's 5,000 validation images (all required), its per-model "
            "preprocessing; none: the model's own preprocessing; settings given on top "
            "are recorded as departures"))
        inputs.enum("attack", list(ATTACKS), label="Attack", view=types.DropdownView(),
                    description="empty: the protocol's")
        inputs.str("eps", label="Epsilon",
                   description="the budget in [0, 1] pixel units, e.g. 0.5/255, 4/255 "
                               "or 0.002 (empty: the protocol's)")
        inputs.int("steps", label="Steps", description="PGD's steps (empty: 40)")
        inputs.str("step_size", label="Step size",
                   description="PGD's absolute step size, e.g. 2/255 (empty: 2/255)")
        inputs.enum("norm", list(NORMS), label="Norm", view=types.DropdownView(),
                    description="the threat model (empty: linf)")
        _check_settings(ctx, inputs)
        inputs.int("limit", label="Limit", description="attack at most N samples "
                                                      "(a resumed run: N more)")
        inputs.enum("device", list(DEVICES), label="Device", default="auto",
                    view=types.DropdownView())
        inputs.int("batch_size", label="Batch size", min=1,
                   description="images per pass (empty: 256 on a GPU, 64 on the CPU)")
        inputs.int("num_workers", label="Decoding workers",
                   description="image decoding processes (empty: one per CPU core "
                               "this process may use)")
        if ctx.dataset is not None and ctx.dataset.media_type == "group":
            inputs.list("slices", types.String(), label="Group slices",
                        description="attack only these group slices (empty: all)")
        inputs.bool("overwrite", label="Overwrite", default=False,
                    description="also attack samples that already have an "
                                "adversarial prediction")
        inputs.str("gt_field", label="Ground truth field", default="ground_truth",
                   description="the true classes the attack moves away from")
        add_delegate_input(ctx, inputs, _large(ctx), delegate_above(DELEGATE_ABOVE),
                           "samples")
        return types.Property(inputs, view=types.View(label="Attack a model"))

    def resolve_delegation(self, ctx):
        return delegation(ctx, _large(ctx))

    def execute(self, ctx):
        from imagenetx.attacks.run import run_attack
        from imagenetx.models.options import from_params

        p = ctx.params

        def job(progress):
            settings = attack_settings(p)
            request, options = from_params(model_params(p))
            return run_attack(ctx.target_view(), p["model"], p["field"], settings, request, options,
                              gt_field=p.get("gt_field") or "ground_truth",
                              progress=progress, slices=p.get("slices") or None)

        def finish(summary):
            return {
                "summary": str(summary),
                "attack": summary.attack,
                "predicted": summary.predicted,
                "failed": summary.failed,
                "flipped": summary.flipped,
                "eval_key": summary.eval_key,
                "robust_accuracy": summary.accuracy,
            }

        return run_with_progress(ctx, job, finish)

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        outputs.float("robust_accuracy", label="Robust accuracy")
        return types.Property(outputs)


def attack_settings(params: dict):
    """The :class:`~imagenetx.attacks.settings.AttackSettings` of the form's
    values: the protocol's, with what the form gives (empty: the
    protocol's), as ``imagenetx attack`` builds them."""
    from imagenetx.attacks.settings import settings_from

    def given(name):
        value = params.get(name)
        return None if value in ("", None) else value

    return settings_from(given("protocol"), attack=given("attack"), eps=given("eps"),
                         norm=given("norm"), steps=given("steps"),
                         step_size=given("step_size"))


def _check_settings(ctx, inputs):
    """The attack's settings, in the form: what will run, or one error line
    (Execute disabled)."""
    from imagenetx.errors import ImageNetXError

    try:
        settings = attack_settings(ctx.params)
    except ImageNetXError as e:
        invalid(inputs, "attack_error", in_form_terms(str(e)))
        return
    inputs.view("attack_note", types.Notice(label=f"Runs {settings.describe()}"))


def _large(ctx) -> bool:
    return is_large(lambda c: c.target_view(), ctx, delegate_above(DELEGATE_ABOVE))
