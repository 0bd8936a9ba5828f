"""The error ratio per slice as a custom metric of a FiftyOne evaluation.

FiftyOne (1.3+) computes a plugin's ``EvaluationMetric`` operators with an
evaluation (``evaluate_classifications(..., custom_metrics=[URI])``) and
keeps what they give in ``results.custom_metrics``, ``{uri: {"key",
"value", "label", "lower_is_better"}}``; its Model Evaluation panel shows
one row per entry, for one run or two side by side. :func:`error_ratio_entries`
gives one such entry per slice (its error ratio, with the bootstrap interval
and the number of images beside it), computed by :func:`compute_ratios`.
"""

import math
from typing import Dict, Optional

from imagenetx.analysis.engine import compute_ratios
from imagenetx.benchmarks import get_benchmark


def error_ratio_entries(samples, pred_field: str, gt_field: str = "ground_truth",
                        slicing: Optional[str] = None, uri: str = "error_ratio"
                        ) -> Dict[str, dict]:
    """The custom-metric entries of a prediction field's error ratios.

    Args:
        samples: the evaluated collection
        pred_field: the prediction field
        gt_field ("ground_truth"): the ground truth field
        slicing (None): the slicing; None: the benchmark's default (the
            top factor on ImageNet-X), else ``tags`` (e.g. ``x:<factor>``)
        uri ("error_ratio"): the metric's URI; each entry's id is
            ``<uri>/<slice>``

    Returns:
        ``{"<uri>/<slice>": {"key": "error_ratio_<slice>", "value",
        "label": "Error ratio: <slice>", "lower_is_better": True, "ci_low",
        "ci_high", "n"}}`` for every slice with images, in slice order
    """
    if slicing is None and get_benchmark(samples).default_slicing is None:
        slicing = "tags"
    result = compute_ratios(samples, pred_field, slicing=slicing, gt_field=gt_field)
    rows = result.to_dict()["models"][pred_field]["slices"]
    entries = {}
    for value, row in rows.items():
        ratio = row["error_ratio"]
        if not row["n"] or ratio is None or not math.isfinite(ratio):
            continue
        entries[f"{uri}/{value}"] = {
            "key": f"error_ratio_{value}",
            "value": ratio,
            "label": f"Error ratio: {value}",
            "lower_is_better": True,
            "ci_low": row["ci_low"],
            "ci_high": row["ci_high"],
            "n": row["n"],
        }
    return entries
