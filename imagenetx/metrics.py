"""Per-factor accuracies and error ratios: pure numpy, no FiftyOne.

The conventions follow the original ``imagenet_x`` toolkit exactly, so the
numbers reproduce the authors' tables:

    accuracy(factor) = correct images with the factor / images with it
    error_ratio(factor) = (1 - accuracy(factor)) / (1 - accuracy)
"""

from dataclasses import dataclass

import numpy as np

from imagenetx.factors import FACTORS

#: factors with fewer images than this get a "few images" flag
MIN_RELIABLE_N = 50


@dataclass(frozen=True)
class FactorTable:
    """Per-factor accuracy of one model.

    Attributes:
        n: images per factor, in :data:`FACTORS` order
        correct: correct images per factor
        n_total: images overall
        correct_total: correct images overall
    """

    n: np.ndarray
    correct: np.ndarray
    n_total: int
    correct_total: int

    @property
    def accuracy(self) -> float:
        """Accuracy over all images (the toolkit's ``average``)."""
        return self.correct_total / self.n_total

    @property
    def factor_accuracy(self) -> np.ndarray:
        """Accuracy per factor (NaN where a factor has no image)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.correct / self.n

    @property
    def error_ratio(self) -> np.ndarray:
        """``(1 - accuracy(factor)) / (1 - accuracy)`` per factor."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return (1 - self.factor_accuracy) / (1 - self.accuracy)

    @property
    def worst_factor(self) -> str:
        """The factor with the lowest accuracy."""
        return FACTORS[int(np.nanargmin(self.factor_accuracy))]

    def rows(self) -> list:
        """One dict per factor: factor, n, accuracy, error_ratio, few."""
        return [
            {
                "factor": factor,
                "n": int(n),
                "accuracy": float(acc),
                "error_ratio": float(ratio),
                "few_images": bool(n < MIN_RELIABLE_N),
            }
            for factor, n, acc, ratio in zip(
                FACTORS, self.n, self.factor_accuracy, self.error_ratio
            )
        ]

    def format(self, title: str = "") -> str:
        """A readable text table, sorted by error ratio."""
        lines = [title] if title else []
        lines.append(
            f"{'factor':<18}{'images':>8}{'accuracy':>10}{'error ratio':>13}"
        )
        for row in sorted(self.rows(), key=lambda r: -np.nan_to_num(r["error_ratio"])):
            flag = "  (few images)" if row["few_images"] else ""
            lines.append(
                f"{row['factor']:<18}{row['n']:>8,}{row['accuracy']:>10.4f}"
                f"{row['error_ratio']:>13.3f}{flag}"
            )
        lines.append(
            f"{'all images':<18}{self.n_total:>8,}{self.accuracy:>10.4f}"
            f"{1.0:>13.3f}"
        )
        return "\n".join(lines)


def factor_table(correct: np.ndarray, factors: np.ndarray) -> FactorTable:
    """Counts per-factor accuracy.

    Args:
        correct: ``(n,)`` bool array, whether each image is classified
            correctly
        factors: ``(n, 16)`` bool matrix of the factors of each image

    Returns:
        a :class:`FactorTable`
    """
    correct = np.asarray(correct, dtype=bool)
    factors = np.asarray(factors, dtype=bool)
    if factors.shape != (len(correct), len(FACTORS)):
        raise ValueError(
            f"factors must have shape ({len(correct)}, {len(FACTORS)}), "
            f"not {factors.shape}"
        )
    return FactorTable(
        n=factors.sum(axis=0),
        correct=factors[correct].sum(axis=0),
        n_total=len(correct),
        correct_total=int(correct.sum()),
    )


def real_correct(predicted: np.ndarray, real_labels: list) -> np.ndarray:
    """Whether each prediction is in the image's ReaL label set.

    This is the original toolkit's convention (``paper`` mode): an image
    whose ReaL set is empty counts as wrong.

    Args:
        predicted: ``(n,)`` predicted class indices
        real_labels: ``n`` lists of valid class indices

    Returns:
        a ``(n,)`` bool array
    """
    return np.fromiter(
        (p in labels for p, labels in zip(predicted.tolist(), real_labels)),
        dtype=bool,
        count=len(real_labels),
    )
