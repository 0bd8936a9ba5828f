"""The attacks by name: the built-in ones (PGD, FGSM, AutoAttack) and those
added with :func:`register_attack`.

An attack is a factory ``settings -> attack``: given the run's
:class:`~imagenetx.attacks.budget.AttackSettings` (its ``eps``, ``norm``,
``steps``, ...), it returns ``attack(model, x, labels) -> x_adv`` with
``model`` mapping ``[0, 1]`` images to logits, ``x`` a ``(N, 3, H, W)``
batch in ``[0, 1]`` and ``labels`` the true output indices, as the built-in
ones in :mod:`imagenetx.attacks.library` do. Everything else (loading,
devices, resume, the adversarial field, its evaluation and chart) is the
attack pipeline's.
"""

from typing import Callable, Tuple, Union

from imagenetx.errors import ImageNetXError
from imagenetx.registry import Registry

#: the attacks the libraries run (:mod:`imagenetx.attacks.library`)
BUILT_IN: Tuple[str, ...] = ("pgd", "fgsm", "autoattack")

#: attack name -> its factory, or ``"module:function"`` of it
ATTACKS: Registry = Registry("attack")
ATTACKS.register("pgd", "imagenetx.attacks.library:foolbox_attack")
ATTACKS.register("fgsm", "imagenetx.attacks.library:foolbox_attack")
ATTACKS.register("autoattack", "imagenetx.attacks.library:autoattack")


def register_attack(name: str, factory: Union[str, Callable, None] = None):
    """Adds an attack called ``name`` (``AttackSettings(attack=NAME)``);
    ``factory`` is ``settings -> attack`` or ``"module:function"`` of it,
    imported on first use. Without ``factory``, a decorator of the factory.
    """
    if not name or name in BUILT_IN or not name.replace("_", "").isalnum():
        raise ImageNetXError(
            f"Cannot register attack '{name}': name it with letters, digits and "
            f"underscores, other than {', '.join(BUILT_IN)}")
    return ATTACKS.register(name, factory)


def attack_names() -> Tuple[str, ...]:
    """The attacks known: the built-in ones, then the registered ones."""
    return tuple(ATTACKS.names())


def attack_factory(name: str) -> Callable:
    """The factory of the attack called ``name``.

    Raises:
        ImageNetXError: for an unknown attack, listing the known ones
    """
    return ATTACKS.get(name)
