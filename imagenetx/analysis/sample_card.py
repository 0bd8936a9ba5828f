"""Everything the project knows about one image, for the App's sample modal:
its ImageNet-X factors, every prediction field's label and whether it is
right, each attack's outcome, and its ImageNet-E edits (the other slices of
its group) with their predictions."""

from dataclasses import asdict, dataclass, field
from typing import List, Optional

from imagenetx.analysis.attacks import CLEAN
from imagenetx.benchmarks.imagenet_e.contract import EDIT_FIELD, LEVEL_FIELD
from imagenetx.classes.imagenet import class_table
from imagenetx.store.datasets import get_dataset
from imagenetx.store.schema import eval_key_of, prediction_fields


@dataclass
class Prediction:
    """One prediction field's answer on the image.

    Attributes:
        field: the prediction field
        label: its label (None: not predicted)
        confidence: its confidence
        correct: whether it is right (``eval_<field>``, else the labels
            compared); None without ground truth or prediction
        clean_label: for an adversarial field, the model's label on the
            clean image; None otherwise
        flipped: for an adversarial field, whether the attack changed it
    """

    field: str
    label: Optional[str]
    confidence: Optional[float]
    correct: Optional[bool]
    clean_label: Optional[str] = None
    flipped: Optional[bool] = None

    @property
    def adversarial(self) -> bool:
        return self.flipped is not None


@dataclass
class Edit:
    """Another slice of the image's group (an ImageNet-E edit of it)."""

    slice: str
    edit: Optional[str]
    level: Optional[str]
    predictions: List[Prediction] = field(default_factory=list)


@dataclass
class SampleCard:
    """What the sample panel shows of one image."""

    id: str
    filepath: str
    ground_truth: Optional[str]
    top_factor: Optional[str]
    factors: List[str]
    metaclass: Optional[str]
    predictions: List[Prediction]
    edits: List[Edit]

    def to_dict(self) -> dict:
        out = asdict(self)
        for p, row in zip(self.predictions, out["predictions"]):
            row["adversarial"] = p.adversarial
        return out


def _predictions(sample, fields, gt_label) -> List[Prediction]:
    labels = class_table().labels
    out = []
    for f in fields:
        pred = sample.get_field(f) if sample.has_field(f) else None
        label = getattr(pred, "label", None)
        key = eval_key_of(f)
        correct = sample.get_field(key) if sample.has_field(key) else None
        if correct is None and label is not None and gt_label is not None:
            correct = label == gt_label
        clean = pred.get_field(CLEAN) if pred is not None and pred.has_field(CLEAN) else None
        flipped = pred.get_field("flipped") if pred is not None and pred.has_field("flipped") else None
        out.append(Prediction(
            f, label, getattr(pred, "confidence", None), correct,
            clean_label=labels[clean] if clean is not None else None,
            flipped=None if clean is None else bool(flipped)))
    return out


def sample_card(samples, sample_id: str, gt_field: str = "ground_truth",
                field_name: str = "imagenetx") -> SampleCard:
    """What the project knows about one sample.

    Args:
        samples: a dataset (or view, or name) holding the sample
        sample_id: the sample's id
        gt_field ("ground_truth"): the ground truth field
        field_name ("imagenetx"): the ImageNet-X field
    """
    dataset = get_dataset(samples)._dataset
    sample = dataset[sample_id]
    fields = prediction_fields(dataset, gt_field)
    gt = sample.get_field(gt_field) if sample.has_field(gt_field) else None
    gt_label = getattr(gt, "label", None)
    x = sample.get_field(field_name) if sample.has_field(field_name) else None

    def x_value(name):
        return x.get_field(name) if x is not None and x.has_field(name) else None

    edits = []
    if dataset.media_type == "group":
        group = sample.get_field(dataset.group_field)
        for name, other in dataset.get_group(group.id).items():
            if other.id == sample.id:
                continue
            other_gt = getattr(other.get_field(gt_field) if other.has_field(gt_field) else None,
                               "label", None)
            edits.append(Edit(
                name,
                other.get_field(EDIT_FIELD) if other.has_field(EDIT_FIELD) else None,
                other.get_field(LEVEL_FIELD) if other.has_field(LEVEL_FIELD) else None,
                _predictions(other, fields, other_gt)))
    return SampleCard(
        id=sample.id, filepath=sample.filepath, ground_truth=gt_label,
        top_factor=x_value("top_factor"), factors=list(x_value("factors") or []),
        metaclass=x_value("metaclass"), predictions=_predictions(sample, fields, gt_label),
        edits=edits)
