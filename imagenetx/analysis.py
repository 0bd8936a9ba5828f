"""Pull the columns a metric needs from a FiftyOne view, in one query."""

import numpy as np

from imagenetx.datasets import get_dataset
from imagenetx.errors import ImageNetXError
from imagenetx.factors import FACTORS
from imagenetx.metrics import FactorTable, factor_table, real_correct
from imagenetx.tagging import DEFAULT_FIELD

CORRECTNESS = ("class", "real")


def factor_accuracies(
    samples,
    pred_field: str,
    correct: str = "class",
    gt_field: str = "ground_truth",
    field_name: str = DEFAULT_FIELD,
    include_prototypes: bool = False,
) -> FactorTable:
    """Per top-factor accuracy of a prediction field over a view.

    Args:
        samples: a dataset, view, or dataset name
        pred_field: the ``fo.Classification`` prediction field, with
            ``class_index``
        correct ("class"): ``"class"`` (prediction equals ground truth) or
            ``"real"`` (prediction in the ReaL label set; an empty set counts
            as wrong, as in the original toolkit)
        gt_field ("ground_truth"): the ground truth field
        field_name ("imagenetx"): the ImageNet-X field
        include_prototypes (False): whether to keep the paper's 3,000
            prototype images, which it leaves out

    Returns:
        a :class:`imagenetx.metrics.FactorTable`
    """
    samples = get_dataset(samples)
    if correct not in CORRECTNESS:
        raise ImageNetXError(
            f"Unknown correctness '{correct}': use one of "
            f"{', '.join(CORRECTNESS)}"
        )
    for field in (pred_field, field_name):
        if not samples.has_field(field):
            raise ImageNetXError(
                f"Dataset '{samples.name}' has no field '{field}': "
                + (
                    "run `imagenetx tag` first"
                    if field == field_name
                    else "pass an existing prediction field"
                )
            )

    view = samples.exists(f"{field_name}.split")
    if not include_prototypes:
        view = view.match({f"{field_name}.prototype": False})
    truth = (
        f"{field_name}.real_labels"
        if correct == "real"
        else f"{gt_field}.class_index"
    )
    top, predicted, truth_values = view.values(
        [f"{field_name}.top_factor", f"{pred_field}.class_index", truth]
    )
    if not top:
        raise ImageNetXError(
            f"No ImageNet-X annotated samples in '{samples.name}' (this "
            "view): run `imagenetx tag` first"
        )
    predicted = np.array(
        [-1 if p is None else p for p in predicted], dtype=np.int64
    )
    if correct == "real":
        if any(t is None for t in truth_values):
            raise ImageNetXError(
                "ReaL labels exist only for validation images: select "
                "`imagenetx.split == 'val'` samples for --correct real"
            )
        is_correct = real_correct(predicted, truth_values)
    else:
        truth_values = np.array(
            [-2 if t is None else t for t in truth_values], dtype=np.int64
        )
        is_correct = predicted == truth_values

    index = {f: k for k, f in enumerate(FACTORS)}
    factors = np.zeros((len(top), len(FACTORS)), dtype=bool)
    for row, factor in enumerate(top):
        if factor is not None:
            factors[row, index[factor]] = True
    return factor_table(is_correct, factors)
