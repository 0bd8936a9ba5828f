"""Attacks added beside the built-in ones (PGD, FGSM, AutoAttack).

An attack is a factory ``settings -> attack``: given the run's
:class:`~imagenetx.attacks.settings.AttackSettings` (its ``eps``, ``norm``,
``steps``, ...), it returns ``attack(model, x, labels) -> x_adv`` with
``model`` mapping ``[0, 1]`` images to logits, ``x`` a ``(N, 3, H, W)``
batch in ``[0, 1]`` and ``labels`` the true output indices, as
:func:`imagenetx.attacks.library.make_attack` returns for the built-in
ones. Everything else (loading, devices, resume, the adversarial field,
its evaluation and chart) is the attack pipeline's.
"""

import importlib
from typing import Callable, Dict, Optional, Tuple, Union

from imagenetx.errors import ImageNetXError

#: the attacks the libraries run (:mod:`imagenetx.attacks.library`)
BUILT_IN: Tuple[str, ...] = ("pgd", "fgsm", "autoattack")

#: attack name -> its factory, or ``"module:function"`` of it
REGISTERED: Dict[str, Union[str, Callable]] = {}


def register_attack(name: str, factory: Union[str, Callable]) -> None:
    """Adds an attack called ``name`` (``--attack NAME``,
    ``AttackSettings(attack=NAME)``); ``factory`` is ``settings -> attack``
    or ``"module:function"`` of it, imported on first use."""
    if not name or name in BUILT_IN or not name.replace("_", "").isalnum():
        raise ImageNetXError(
            f"Cannot register attack '{name}': name it with letters, digits and "
            f"underscores, other than {', '.join(BUILT_IN)}")
    REGISTERED[name] = factory


def attack_names() -> Tuple[str, ...]:
    """The attacks known: the built-in ones, then the registered ones."""
    return BUILT_IN + tuple(REGISTERED)


def registered_factory(name: str) -> Optional[Callable]:
    """The factory of a registered attack (None for a built-in one)."""
    factory = REGISTERED.get(name)
    if isinstance(factory, str):
        module, _, function = factory.partition(":")
        factory = getattr(importlib.import_module(module), function)
    return factory
