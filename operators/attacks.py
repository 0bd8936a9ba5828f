"""The "Attack a model" operator: a form over
:func:`imagenetx.attacks.run.run_attack`, as ``imagenetx attack``."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import delegate_above, delegation, invalid
from .models import (
    add_device_inputs,
    add_model_inputs,
    add_protocol_input,
    add_samples_inputs,
    run_model,
    target_is_large,
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
        from imagenetx.attacks.registry import attack_names
        from imagenetx.attacks.budget import NORMS

        inputs = types.Object()
        add_model_inputs(ctx, inputs, "Adversarial field",
                         "the adversarial prediction field to write, e.g. r50_pgd")
        add_protocol_input(inputs, default="gavrikov", description=(
            "gavrikov: PIL Resize 256 + CenterCrop 224, PGD-40 L∞ at 0.5/255, step "
            "2/255, as Gavrikov & Keuper; robustbench: AutoAttack standard L∞ at 4/255 "
            "on RobustBench's 5,000 validation images (all required), its per-model "
            "preprocessing; none: the model's own preprocessing; settings given on top "
            "are recorded as departures"), ctx=ctx)
        inputs.enum("attack", list(attack_names()), label="Attack", view=types.DropdownView(),
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
        add_device_inputs(inputs)
        add_samples_inputs(ctx, inputs, "attack", "an adversarial prediction",
                           gt_description="the true classes the attack moves away from",
                           delegate_default=DELEGATE_ABOVE)
        return types.Property(inputs, view=types.View(label="Attack a model"))

    def resolve_delegation(self, ctx):
        return delegation(ctx, target_is_large(ctx, delegate_above(DELEGATE_ABOVE)))

    def execute(self, ctx):
        from imagenetx.attacks.run import run_attack

        p = ctx.params

        def attack(view, model, field, request, options, **kw):
            settings = attack_settings(p)
            return run_attack(view, model, field, settings, request, options, **kw)

        return run_model(ctx, attack, lambda s: {"attack": s.attack, "flipped": s.flipped,
                                                  "robust_accuracy": s.accuracy})

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        outputs.float("robust_accuracy", label="Robust accuracy")
        return types.Property(outputs)


def attack_settings(params: dict):
    """The :class:`~imagenetx.attacks.budget.AttackSettings` of the form's
    values: the protocol's, with what the form gives (empty: the
    protocol's), as ``imagenetx attack`` builds them."""
    from imagenetx.attacks.budget import settings_from

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
        invalid(inputs, "attack_error", e)
        return
    inputs.view("attack_note", types.Notice(label=f"Runs {settings.describe()}"))

