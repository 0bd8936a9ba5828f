"""Adversarial attacks as a task of the model pipeline: each attacked image
gets the adversarial prediction (a prediction field like any other, so
robust accuracy is its accuracy and ``ratios`` gives adversarial error
ratios per ImageNet-X factor) and whether the attack flipped it.
Attacks come from foolbox (and AutoAttack from its reference package)."""
