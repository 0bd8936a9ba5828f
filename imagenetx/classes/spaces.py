"""Label spaces: what counts as a correct prediction.

A label space reads a few sample fields (the ground truth's class index, a
set of valid classes, ...) and each model's prediction, and says per image
whether the prediction is correct and whether the image counts at all. The
analysis engine computes correctness only through these objects, for the
statistics and for the mistake views alike, so the two always agree.

-   :class:`ExactClass`: the predicted class is the true class
-   :class:`SameGroup`: the predicted class lies in the true class's group
    (ImageNet-X meta-classes)
-   :class:`InSet`: the predicted class is in the image's set of valid
    classes (ReaL labels; ImageNet-D's classes, each 1-3 ImageNet-1k classes)
-   :class:`TopKInSet`: one of the prediction's best k classes is in that
    set, each image counted once (ImageNet-D's top-5)
-   :class:`ClassSubset`: another label space, after restricting the model's
    output to a class subset (ImageNet-A/R's 200 classes: argmax over the
    subset of the stored logits, as timm's ``validate.py`` does with
    ``valid_labels``)

Columns arrive as plain lists, one value per image (None where missing).
"""

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.correctness import RealSets, restricted_argmax, same_group

#: what a label space returns: ``(correct, counted)``, two ``(n,)`` bool arrays
Scoring = Tuple[np.ndarray, np.ndarray]


def int_column(values: Sequence) -> np.ndarray:
    """Ints with None -> -1."""
    return np.array([-1 if v is None else v for v in values], dtype=np.int64)


class LabelSpace:
    """Base class: exact class of ``{field}.class_index`` against
    ``gt_path``; subclasses change what "correct" means.

    Attributes:
        name: the name users pick it by (``--correct NAME``)
        gt_path: the ground truth class index path
        num_outputs: the number of classes of the models' output
    """

    name: str = "class"
    description: str = "the predicted class is the true class"
    #: what to do about predictions outside the space, for errors
    fix: str = "predict again with a model of that many outputs"

    def __init__(self, gt_path: str = "ground_truth.class_index",
                 num_outputs: int = 1000, name: Optional[str] = None,
                 description: Optional[str] = None, fix: Optional[str] = None):
        self.gt_path = gt_path
        self.num_outputs = num_outputs
        if name is not None:
            self.name = name
        if description is not None:
            self.description = description
        if fix is not None:
            self.fix = fix

    def sample_paths(self) -> List[str]:
        """The sample field paths this label space reads."""
        return [self.gt_path]

    def model_paths(self, field: str) -> List[str]:
        """The paths it reads of one prediction field; the first is the
        predicted class index."""
        return [f"{field}.class_index"]

    def predicted(self, field: str, columns: Dict[str, list]) -> np.ndarray:
        """Each image's predicted class index (-1 where none), checked
        against :attr:`num_outputs`."""
        pred = int_column(columns[f"{field}.class_index"])
        if pred.size and pred.max() >= self.num_outputs:
            raise ImageNetXError(
                f"Field '{field}' has class_index values outside "
                f"0-{self.num_outputs - 1}: its predictions do not fit the "
                f"'{self.name}' label space ({self.num_outputs} classes); "
                f"{self.fix}"
            )
        return pred

    def score(self, field: str, columns: Dict[str, list]) -> Scoring:
        """``(correct, counted)`` of prediction field ``field``."""
        pred = self.predicted(field, columns)
        gt = int_column(columns[self.gt_path])
        counted = (pred >= 0) & (gt >= 0)
        return counted & (pred == gt), counted


class ExactClass(LabelSpace):
    """The predicted class is the true class."""


class SameGroup(LabelSpace):
    """The predicted class lies in the true class's group.

    Args:
        group_of: ``(num_outputs,)`` group id of each class
        name ("metaclass"): the label space's name
    """

    description = "the predicted class is in the true class's group"

    def __init__(self, group_of: np.ndarray, name: str = "metaclass",
                 gt_path: str = "ground_truth.class_index"):
        super().__init__(gt_path, len(group_of))
        self.group_of = np.asarray(group_of)
        self.name = name

    def score(self, field, columns):
        pred = self.predicted(field, columns)
        gt = int_column(columns[self.gt_path])
        counted = (pred >= 0) & (gt >= 0)
        ok = same_group(np.where(counted, pred, 0), np.where(counted, gt, 0),
                        self.group_of)
        return counted & ok, counted


class InSet(LabelSpace):
    """The predicted class is in the image's set of valid classes.

    Args:
        set_path: the sample path of each image's list of valid classes
        name: the label space's name
        empty ("count"): an image whose set is empty counts as wrong
            (``"count"``, the ImageNet-X toolkit's ReaL convention) or is
            left out (``"skip"``, the ReaL paper's)
        missing_error (None): raised when some image of the view has no set
            at all (None); without it those images are left out
    """

    description = "the predicted class is in the image's set of valid classes"

    def __init__(self, set_path: str, name: str, empty: str = "count",
                 missing_error: Optional[str] = None, num_outputs: int = 1000):
        super().__init__(set_path, num_outputs)
        self.name = name
        self.empty = empty
        self.missing_error = missing_error

    def score(self, field, columns):
        pred = self.predicted(field, columns)
        lists = columns[self.gt_path]
        missing = np.fromiter((s is None for s in lists), bool, len(lists))
        if missing.any() and self.missing_error:
            raise ImageNetXError(self.missing_error)
        sets = RealSets.from_lists([s or () for s in lists])
        counted = (pred >= 0) & ~missing
        if self.empty == "skip":
            counted &= sets.sizes > 0
        return counted & sets.contains(np.where(counted, pred, -1)), counted


class TopKInSet(InSet):
    """Any of the prediction's ``k`` best classes is in the image's set of
    valid classes (top-k accuracy), each image counted once however many of
    its top ``k`` are valid. Reads ``{field}.top5`` as ``imagenetx predict``
    writes it.

    Args:
        set_path: the sample path of each image's list of valid classes
        name: the label space's name
        k (5): how many of the best classes count
    """

    description = "one of the prediction's best k classes is valid"

    def __init__(self, set_path: str, name: str, k: int = 5,
                 num_outputs: int = 1000):
        super().__init__(set_path, name, empty="count", num_outputs=num_outputs)
        self.k = k

    def model_paths(self, field):
        return [f"{field}.class_index", f"{field}.top5"]

    def score(self, field, columns):
        tops = columns[f"{field}.top5"]
        if not any(t for t in tops):
            raise ImageNetXError(
                f"Field '{field}' has no top5 classes, which the '{self.name}' "
                "label space needs: predict with `predict()`, which "
                "stores them")
        sets = columns[self.gt_path]
        pred = self.predicted(field, columns)
        counted = (pred >= 0) & np.fromiter((s is not None for s in sets), bool, len(sets))
        hit = np.fromiter(
            (bool(t) and s is not None and not set(t[:self.k]).isdisjoint(s)
             for t, s in zip(tops, sets)), bool, len(sets))
        return counted & hit, counted


class ClassSubset(LabelSpace):
    """Another label space after restricting the output to a class subset:
    the prediction is the argmax of the stored logits over ``valid``.

    Args:
        base: the label space that judges the restricted prediction
        valid: the allowed class indices
        name: the label space's name
    """

    description = "argmax over a class subset, then the base label space"

    def __init__(self, base: LabelSpace, valid: Sequence[int], name: str):
        super().__init__(base.gt_path, base.num_outputs)
        self.base = base
        self.valid = np.asarray(valid, dtype=np.int64)
        self.name = name

    def sample_paths(self):
        return self.base.sample_paths()

    def model_paths(self, field):
        return [f"{field}.class_index", f"{field}.logits"]

    def score(self, field, columns):
        logits = columns[f"{field}.logits"]
        has = np.fromiter((v is not None for v in logits), bool, len(logits))
        if not has.any():
            raise ImageNetXError(
                f"Field '{field}' has no stored logits, and the '{self.name}' "
                f"label space restricts the output to {len(self.valid)} "
                "classes: predict again with `predict(logits=True)`"
            )
        width = len(next(v for v in logits if v is not None))
        if width != self.num_outputs:
            raise ImageNetXError(
                f"Field '{field}' stores {width} logits, not "
                f"{self.num_outputs}: its outputs do not fit the "
                f"'{self.name}' label space"
            )
        scores = np.stack([v if v is not None else np.zeros(width) for v in logits])
        pred = np.where(has, restricted_argmax(scores, self.valid), -1)
        restricted = dict(columns)
        restricted[f"{field}.class_index"] = [int(p) if p >= 0 else None for p in pred]
        return self.base.score(field, restricted)
