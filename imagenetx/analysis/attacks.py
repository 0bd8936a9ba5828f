"""Which images and which slices an attack breaks.

An adversarial field (:func:`imagenetx.attacks.run.run_attack`) keeps, per
image, the model's top-1 on the clean image (``clean_class_index``) beside
its adversarial prediction. Scored through the benchmark's label space,
both give per slice (an ImageNet-X factor, ...):

-   ``clean_right``: images the model gets right before the attack
-   ``broken``: of those, the images it gets wrong after the attack
-   ``success_rate``: ``broken / clean_right``, with a Wilson interval

so a factor whose success rate is above the overall one is where the
attack breaks the model more easily. The adversarial error ratios per
factor are :func:`imagenetx.analysis.compute_ratios` on the same field.
"""

from typing import List, Optional

import numpy as np

from imagenetx.analysis.engine import Prepared, prepare
from imagenetx.analysis.populations import Population, whole_set_top1
from imagenetx.analysis.settings import Settings
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.stats import INTERVAL_LEVEL, to_json, wilson_interval
from imagenetx.store.datasets import get_dataset
from imagenetx.store.names import INFO_KEY
from imagenetx.store.schema import prediction_fields

#: the attribute an adversarial prediction keeps of the clean image
CLEAN = "clean_class_index"


def attack_fields(samples, fields: Optional[List[str]] = None) -> List[str]:
    """The adversarial fields among ``fields`` (default: every field of the
    dataset), those written by ``imagenetx attack``."""

    samples = get_dataset(samples)
    fields = prediction_fields(samples) if fields is None else fields
    return [f for f in fields if samples.has_field(f"{f}.{CLEAN}")]


def _check_attack_fields(samples, fields) -> List[str]:
    fields = [fields] if isinstance(fields, str) else list(fields)
    others = [f for f in fields if f not in attack_fields(samples, fields)]
    if others:
        raise ImageNetXError(
            f"{', '.join(others)}: not written by an attack (no '{CLEAN}'): "
            "run `run_attack()` to make an adversarial field, or pick one")
    return fields


def _clean_correct(p: Prepared, field: str) -> np.ndarray:
    """Whether each counted image's clean prediction is right, in the same
    label space as its adversarial one."""
    space = p.label_space
    if space.model_paths(field) != [f"{field}.class_index"]:
        raise ImageNetXError(
            f"The '{space.name}' label space reads more than the predicted class, "
            "which an attack keeps only for its adversarial images: score the "
            "attack by class, metaclass or ReaL")
    columns = dict(p.columns)
    columns[f"{field}.class_index"] = columns[f"{field}.{CLEAN}"]
    right, counted = space.score(field, columns)
    return right & counted & p.counted[field]


def _prepared(samples, fields, settings, kwargs, ids=False) -> Prepared:
    samples = get_dataset(samples)
    fields = _check_attack_fields(samples, fields)
    kwargs["intervals"] = False
    return prepare(samples, fields, settings, ids=ids,
                   extra_paths=[f"{f}.{CLEAN}" for f in fields], **kwargs)


def _rate(broken: int, right: int, level: float) -> dict:
    if not right:
        return {"success_rate": None, "ci_low": None, "ci_high": None}
    low, high = wilson_interval(broken, right, level)
    return {"success_rate": broken / right, "ci_low": to_json(low), "ci_high": to_json(high)}


def attack_success(samples, fields, settings: Settings = None, **kwargs) -> dict:
    """Per slice and adversarial field: the images right before the attack,
    those it broke, and the success rate with its interval.

    Args:
        samples: a dataset, view, or dataset name
        fields: one adversarial field or a list of them
        settings (None): as in :func:`imagenetx.analysis.compute_ratios`
            (slicing, label space, ``within``), with keyword overrides

    Returns:
        a JSON-ready ``{"slicing", "slice_title", "label_space", "values",
        "models": {field: {"n", "evaluated", "population", "clean_right",
        "broken", "clean_accuracy", "robust_accuracy", "success_rate",
        "ci_low", "ci_high", "attack", "slices": {value: {"n",
        "clean_right", "broken", "success_rate", "ci_low", "ci_high"}}}}}``.
        On ImageNet-X, ``clean_accuracy`` and ``robust_accuracy`` are top-1
        over every attacked image with a ground truth (``evaluated``: all
        5,000 of RobustBench's), as the papers count; ``n``, the success
        rates and the slices count the images with ImageNet-X factors, and
        ``population`` says so where the two differ

    Raises:
        ImageNetXError: for a field not written by an attack, and as
            :func:`imagenetx.analysis.prepare`
    """
    p = _prepared(samples, fields, settings, kwargs)
    level = p.settings.level or INTERVAL_LEVEL
    values = [str(v) for v in p.slicing.values]
    view = get_dataset(samples)
    dataset = view._dataset
    whole = p.benchmark.name == "imagenet_x"
    if whole:  # every attacked image with a ground truth, factors or not
        robust = whole_set_top1(view, list(p.correct), p.settings.gt_field)
        clean = whole_set_top1(view, list(p.correct), p.settings.gt_field, CLEAN)
    models = {}
    for f in p.correct:
        counted = p.counted[f]
        right = _clean_correct(p, f)
        broken = right & ~p.correct[f]
        inside = p.membership & counted[:, None]
        n_slice = inside.sum(axis=0)
        right_slice = (inside & right[:, None]).sum(axis=0)
        broken_slice = (inside & broken[:, None]).sum(axis=0)
        n = int(counted.sum())
        info = (dataset.get_field(f).info or {}).get(INFO_KEY) or {}
        if whole:
            evaluated = robust[f].n
            accuracies = (clean[f].accuracy, robust[f].accuracy)
        else:
            evaluated, accuracies = n, (right.sum() / n, p.correct[f].sum() / n)
        population = Population(n, evaluated, not p.settings.include_prototypes)
        models[f] = {
            "n": n,
            "evaluated": evaluated,
            "population": population.note(),
            "clean_right": int(right.sum()),
            "broken": int(broken.sum()),
            "clean_accuracy": accuracies[0],
            "robust_accuracy": accuracies[1],
            **_rate(int(broken.sum()), int(right.sum()), level),
            "attack": (info.get("attack") or {}),
            "slices": {
                v: {"n": int(k), "clean_right": int(r), "broken": int(b),
                    **_rate(int(b), int(r), level)}
                for v, k, r, b in zip(values, n_slice, right_slice, broken_slice)},
        }
    return {
        "dataset": p.dataset_name,
        "slicing": p.slicing.name,
        "slice_title": p.slicing.label,
        "label_space": p.label_space.name,
        "values": values,
        "models": {f: {k: to_json(v) if not isinstance(v, dict) else v
                       for k, v in m.items()} for f, m in models.items()},
    }


def broken_view(samples, field: str, slice_value=None, settings: Settings = None,
                **kwargs):
    """The images of a slice that ``field``'s attack broke: right before the
    attack, wrong after it (its count is the slice's ``broken`` in
    :func:`attack_success` with the same settings).

    Args:
        samples: a dataset, view, or dataset name
        field: the adversarial field
        slice_value (None): a value of the slicing; None: every slice
        settings (None): as in :func:`attack_success`
    """
    p = _prepared(samples, [field], settings, kwargs, ids=True)
    broken = _clean_correct(p, field) & ~p.correct[field]
    if slice_value is not None:
        broken &= p.in_slice(slice_value)
    return p.view.select([i for i, b in zip(p.ids, broken) if b])
