"""Views of a cue-conflict dataset: the decisions a model made by texture.

The test is the ``texture`` label space's: the decision's ``class_index``
equals the image's ``texture_index``. As a match expression it stays true
for new predictions, so it is saved on the dataset for the App's sidebar.
"""

from typing import Optional

from fiftyone import ViewField as F

from imagenetx.benchmarks.cue_conflict.contract import require_contract
from imagenetx.classes.cue_conflict import category_index
from imagenetx.store.datasets import get_dataset


def texture_decisions_view(samples, pred_field: str, category: Optional[str] = None):
    """The cue-conflict images whose decision in ``pred_field`` names the
    texture category (the decisions shape bias counts against), optionally
    of one shape category.

    The same test as the ``texture`` label space: the decision's
    ``class_index`` equals the image's ``texture_index``.
    """
    samples = get_dataset(samples)
    require_contract(samples)
    expr = F("cue_conflict") & (F(f"{pred_field}.class_index") == F("texture_index"))
    if category is not None:
        expr &= F("ground_truth.class_index") == category_index(category)
    return samples.match(expr)


def save_texture_view(dataset, pred_field: str) -> str:
    """Saves :func:`texture_decisions_view` of a field on its dataset, so
    the App's sidebar lists it; returns the view's name."""
    name = f"{pred_field} decided by texture"
    view = texture_decisions_view(dataset, pred_field)
    if dataset.has_saved_view(name):
        dataset.delete_saved_view(name)
    dataset.save_view(name, view, description=(
        f"Cue-conflict images where '{pred_field}' answered the texture "
        "category (imagenetx)"))
    return name
