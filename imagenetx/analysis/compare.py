"""Significance across models: McNemar per slice between two fields, and
the paper's Alexander-Govern test across groups of fields."""

import numpy as np

from imagenetx.analysis.engine import prepare
from imagenetx.analysis.settings import Settings
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.stats import MCNEMAR_EXACT_BELOW, alexander_govern, mcnemar
from imagenetx.metrics.summary import to_json


def _header(p, **more) -> dict:
    s = p.settings
    return {"dataset": p.dataset_name, "benchmark": p.benchmark.name,
            "slicing": p.slicing.name, "correct": p.label_space.name,
            "real_mode": s.real_mode, **more}


def compare_models(samples, field_a: str, field_b: str,
                   settings: Settings = None, **kwargs) -> dict:
    """McNemar's paired test per slice between two prediction fields, on the
    images both predict, with Holm's correction over the slices (see
    :func:`imagenetx.metrics.stats.mcnemar`).

    Returns:
        JSON-ready ``{"a", "b", "n", "accuracy_a", "accuracy_b", "method",
        "overall": {"n", "a_only", "b_only", "statistic", "p", "method"},
        "slices": {SLICE: {"n", "a_only", "b_only", "statistic", "p",
        "p_holm", "method"}}}``; ``a_only`` counts images that A gets right
        and B wrong
    """
    if field_a == field_b:
        raise ImageNetXError("Compare two different prediction fields")
    kwargs["intervals"] = False
    p = prepare(samples, [field_a, field_b], settings, **kwargs)
    both = p.counted[field_a] & p.counted[field_b]
    a = p.correct[field_a][both]
    b = p.correct[field_b][both]
    test = mcnemar(a, b, p.membership[both], p.slicing.values)
    return _header(
        p, a=field_a, b=field_b, n=int(both.sum()),
        accuracy_a=to_json(a.mean()) if len(a) else None,
        accuracy_b=to_json(b.mean()) if len(b) else None,
        method=(f"McNemar: exact binomial below {MCNEMAR_EXACT_BELOW} "
                "discordant pairs, else chi2 with continuity correction; "
                "Holm over slices"),
        **test.to_dict(),
    )


def compare_groups(samples, groups: dict, settings: Settings = None,
                   **kwargs) -> dict:
    """The paper's Alexander-Govern test per slice across groups of models
    (e.g. model families): each group's samples are its models' error
    ratios on the slice (see :func:`imagenetx.metrics.stats.alexander_govern`).

    Args:
        groups: ``{group name: [prediction fields]}``, at least two groups
            of at least two fields each

    Returns:
        JSON-ready ``{"groups": {...}, "slices": {SLICE: {"statistic",
        "p"}}}``
    """
    fields = [f for members in groups.values() for f in members]
    kwargs["intervals"] = False
    p = prepare(samples, fields, settings, **kwargs)

    test = alexander_govern({
        g: np.array([p.table(f).error_ratio for f in members])
        for g, members in groups.items()
    })
    return _header(
        p, groups={g: list(m) for g, m in groups.items()},
        slices={v: {"statistic": to_json(test["statistic"][i]),
                    "p": to_json(test["p"][i])}
                for i, v in enumerate(p.slicing.values)},
    )
