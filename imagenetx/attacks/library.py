"""The attack libraries, behind one call: ``attack(model, x, labels) -> x_adv``.

foolbox (Gavrikov & Keuper's own library, ``eval_imagenet_adv.py``) runs
PGD and FGSM: so the numbers are those of the paper's script, not of a
re-implementation. AutoAttack runs through Croce & Hein's own package on
PyPI, ``pyautoattack`` (the one RobustBench depends on), version
``standard``, as RobustBench's ``eval.py`` calls it. torchattacks was not
chosen: it pins ``requests~=2.25``, older than this project's documentation
tools need.
"""

from __future__ import annotations

from typing import Callable

import torch

from imagenetx.attacks.registry import attack_factory
from imagenetx.attacks.budget import AttackSettings
from imagenetx.errors import ImageNetXError

AUTOATTACK_INSTALL = "pip install pyautoattack"


def make_attack(settings: AttackSettings) -> Callable:
    """``attack(model, x, labels) -> x_adv`` for ``settings``: ``model``
    maps ``[0, 1]`` images to logits (normalization inside), ``x`` is
    ``(N, 3, H, W)`` in ``[0, 1]``, ``labels`` the true output indices.

    Raises:
        ImageNetXError: for an unknown attack, or when the attack's library
            is not installed
    """
    return attack_factory(settings.attack)(settings)


def foolbox_attack(settings: AttackSettings) -> Callable:
    """PGD or FGSM (FGM for L2) as foolbox runs them, as Gavrikov & Keuper's
    script does."""
    try:
        import foolbox as fb
    except ImportError:
        raise ImageNetXError(
            "Attacks need foolbox: pip install foolbox") from None
    linf = settings.norm == "linf"
    if settings.attack == "pgd":
        kind = fb.attacks.LinfPGD if linf else fb.attacks.L2PGD
        attack = kind(steps=settings.steps, abs_stepsize=settings.step_size,
                      random_start=settings.random_start)
    else:
        attack = fb.attacks.FGSM() if linf else fb.attacks.FGM()

    def run(model, x, labels):
        # the inputs' device: foolbox's default (cuda:0 when there is a GPU)
        # would move the model off the device the run placed it on
        fmodel = fb.PyTorchModel(model, bounds=(0, 1), device=x.device)
        _, clipped, _ = attack(fmodel, x, labels, epsilons=settings.eps)
        return clipped

    return run


def autoattack(settings: AttackSettings) -> Callable:
    """AutoAttack ``standard`` through Croce & Hein's own package, as
    RobustBench's ``eval.py`` calls it."""
    try:
        from pyautoattack import AutoAttack
    except ImportError:
        raise ImageNetXError(
            f"`attack=autoattack` needs Croce & Hein's AutoAttack: {AUTOATTACK_INSTALL}"
        ) from None
    norm = "Linf" if settings.norm == "linf" else "L2"

    def run(model, x, labels):
        adversary = AutoAttack(model, norm=norm, eps=settings.eps, version="standard",
                               seed=settings.seed, device=x.device)
        x_adv, _ = adversary.run_standard_evaluation(x, labels, batch_size=x.shape[0])
        return x_adv

    return run


class InputsInUnitRange(torch.nn.Module):
    """An engine as the attack libraries take a model: ``[0, 1]`` images
    in, logits out, the classifier's normalization inside."""

    def __init__(self, engine):
        super().__init__()
        self.engine = engine
        self.module = engine.module
        # foolbox warns about a model in training mode: this wrapper's mode
        # is the classifier's (eval)
        self.train(engine.module.training)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.engine.logits(x)


def check_gradients(engine, what: str) -> None:
    """Raises ImageNetXError unless gradients reach the classifier's
    inputs (an attack needs them).

    The probe is random in ``[0, 1]`` (seeded): a flat image can become
    exact zeros under a model's normalization, and a randomly initialised
    network then gives zero gradients though it is differentiable.
    """
    size = engine.classifier.preprocessing.input_size
    generator = torch.Generator().manual_seed(0)
    x = torch.rand((1, *size), generator=generator).to(engine.device).requires_grad_(True)
    try:
        with torch.enable_grad():
            engine.logits(x).sum().backward()
    except RuntimeError as e:
        raise ImageNetXError(
            f"Model '{what}' cannot be attacked: gradients do not reach its inputs "
            f"({str(e).splitlines()[0][:200]}); attack a differentiable PyTorch model") from None
    if x.grad is None or not torch.isfinite(x.grad).all() or not x.grad.abs().sum() > 0:
        raise ImageNetXError(
            f"Model '{what}' cannot be attacked: gradients do not reach its inputs; "
            "attack a differentiable PyTorch model")
    engine.module.zero_grad(set_to_none=True)
