"""What an attack is: its kind, budget and steps, and the named protocols.

Defaults reproduce Gavrikov & Keuper's (CVPR 2024) ``eval_imagenet_adv.py``:
foolbox ``LinfPGD(steps=40, abs_stepsize=2/255)`` at ε = 0.5/255, random
start on (foolbox's default), on inputs in ``[0, 1]`` with the
normalization inside the model. ``robustbench`` is RobustBench's ImageNet
protocol: AutoAttack ``standard`` at L∞ ε = 4/255 on its 5,000 images.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, replace
from fractions import Fraction
from typing import Optional, Union

from imagenetx.attacks.registry import ATTACKS
from imagenetx.errors import ImageNetXError
from imagenetx.protocols import get_protocol

NORMS = ("linf", "l2")

#: Gavrikov's PGD-40 low budget
DEFAULT_EPS = 0.5 / 255
DEFAULT_STEPS = 40
DEFAULT_STEP_SIZE = 2 / 255


@dataclass(frozen=True)
class AttackSettings:
    """One attack's settings (kept in the adversarial field's info).

    Attributes:
        attack: ``pgd``, ``fgsm`` or ``autoattack``
        eps: the budget, in ``[0, 1]`` pixel units
        norm: ``linf`` or ``l2``
        steps: PGD's steps
        step_size: PGD's absolute step size
        random_start: PGD's random start (foolbox's default, as Gavrikov)
        seed: seeds each batch's random start with its first sample
        protocol: the named protocol these came from, if any
    """

    attack: str = "pgd"
    eps: float = DEFAULT_EPS
    norm: str = "linf"
    steps: int = DEFAULT_STEPS
    step_size: float = DEFAULT_STEP_SIZE
    random_start: bool = True
    seed: int = 0
    protocol: Optional[str] = "gavrikov"

    def check(self) -> "AttackSettings":
        """Returns itself; raises ImageNetXError for a bad setting."""
        if self.attack not in ATTACKS:
            raise ATTACKS.unknown(self.attack)
        if self.norm not in NORMS:
            raise ImageNetXError(f"Unknown `norm` '{self.norm}': use linf or l2")
        if not math.isfinite(self.eps):
            raise ImageNetXError(f"`eps` must be a finite number, not {self.eps}: e.g. 0.5/255")
        if not self.eps >= 0:
            raise ImageNetXError(f"`eps` must be 0 or more, not {self.eps}")
        if self.steps < 1:
            raise ImageNetXError(f"`steps` must be at least 1, not {self.steps}")
        if not (self.step_size > 0 and math.isfinite(self.step_size)):
            raise ImageNetXError(
                f"`step_size` must be a finite number more than 0, not {self.step_size}")
        if self.norm == "linf" and self.eps > 1:  # every pixel may move anywhere already
            raise ImageNetXError(
                f"`eps={_as_255(self.eps)}` ({self.eps:g}) is beyond the [0, 1] pixel range "
                "of an L∞ attack: give a budget of at most 1, e.g. 4/255")
        return self

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        """``PGD-40 L∞ ε=0.5/255 (step 2/255, random start)``."""
        eps = _as_255(self.eps)
        norm = "L∞" if self.norm == "linf" else "L2"
        if self.attack == "pgd":
            start = ", random start" if self.random_start else ""
            return (f"PGD-{self.steps} {norm} ε={eps} (step {_as_255(self.step_size)}"
                    f"{start})")
        name = {"fgsm": "FGSM", "autoattack": "AutoAttack standard"}.get(self.attack, self.attack)
        return f"{name} {norm} ε={eps}"


def protocol_settings(protocol: str) -> AttackSettings:
    """The attack a named protocol pins (:mod:`imagenetx.protocols`); a
    protocol that pins none gives the default settings, unnamed."""
    pinned = get_protocol(protocol)
    if pinned is None or not pinned.attack:
        return AttackSettings(protocol=None)
    return AttackSettings(**pinned.attack, protocol=pinned.name)


def with_overrides(settings: AttackSettings, **given) -> AttackSettings:
    """``settings`` with the options the user gave (None: not given); any
    change to a protocol's settings drops its name."""
    given = {k: v for k, v in given.items() if v is not None}
    changed = {k: v for k, v in given.items() if getattr(settings, k) != v}
    out = replace(settings, **given)
    if changed.keys() - {"seed"}:
        out = replace(out, protocol=None)
    return out.check()


def settings_from(protocol: Optional[str] = None, eps=None, step_size=None,
                  **given) -> AttackSettings:
    """The settings of ``protocol`` (default ``gavrikov``) with the options
    given (None: the protocol's), as the command line and the App's form
    give them: ``eps`` and ``step_size`` as :func:`parse_eps` reads them."""
    return with_overrides(
        protocol_settings(protocol or "gavrikov"),
        eps=None if eps is None else parse_eps(eps),
        step_size=None if step_size is None else parse_eps(step_size, "`step_size`"),
        **given)


def parse_eps(text: Union[str, float], option: str = "`eps`") -> float:
    """A budget from ``0.5/255``, ``4/255``, ``0.002`` or a number.

    Raises:
        ImageNetXError: for anything else, a budget that is not finite
            (``1e999``, ``nan``), or a negative one
    """
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        s = str(text).strip()
        if not re.fullmatch(r"[0-9.eE+-]+(/[0-9.eE+-]+)?", s):
            raise ImageNetXError(
                f"{option} '{text}' is not a number or a fraction: e.g. 0.5/255 or 0.002")
        try:
            num, _, den = s.partition("/")
            value = float(num) / float(den) if den else float(num)
        except (ValueError, ZeroDivisionError):
            raise ImageNetXError(
                f"{option} '{text}' is not a number or a fraction: e.g. 0.5/255 or 0.002"
            ) from None
    if not math.isfinite(value):
        raise ImageNetXError(
            f"{option} '{text}' is not a finite number: give a budget in [0, 1] pixel "
            "units, e.g. 0.5/255 or 0.002")
    if not value >= 0:
        raise ImageNetXError(f"{option} must be 0 or more, not {text}")
    return value


def _as_255(value: float) -> str:
    if not math.isfinite(value):
        return f"{value:g}"
    frac = Fraction(value * 255).limit_denominator(100)
    return f"{float(frac):g}/255" if abs(float(frac) - value * 255) < 1e-9 else f"{value:g}"
