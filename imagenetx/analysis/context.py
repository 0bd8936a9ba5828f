"""Put prediction fields in context: the ImageNet-X paper's Figure 4.

Per factor, the published models of the chosen groups (the authors' tables,
:mod:`imagenetx.benchmarks.imagenet_x.reference`) give a cloud of (overall
accuracy, factor accuracy) points; a line in logit space is fitted through
it (:func:`imagenetx.metrics.trends.fit_cloud`; empirical logits with the
tables' image counts). The user's prediction
fields are scored live from their dataset, with the same images and
correctness as the tables, and placed in that cloud: the headline is each
field's residual per factor in units of the cloud's spread ("for its
accuracy, this model is unusually weak on texture": a z of -2).
"""

from dataclasses import dataclass, replace
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from imagenetx.analysis.engine import prepare
from imagenetx.analysis.settings import Settings
from imagenetx.benchmarks import get_benchmark
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.benchmarks.imagenet_x.reference import (
    ERROR_TYPES,
    check_choices,
    read_reference,
    table_counts,
)
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.stats import to_json
from imagenetx.metrics.trends import CloudFit, fit_cloud
from imagenetx.store.datasets import get_dataset

#: the ImageNet-X slicing of each table labelling
SLICING_WHICH = {"top_factor": "top", "factors": "multi"}

#: |z| from which a factor is called unusual in the text output
UNUSUAL_Z = 2.0


@dataclass(frozen=True)
class UserPoint:
    """One prediction field in the cloud.

    Attributes:
        n: images scored
        accuracy: overall accuracy
        factor_accuracy: ``(16,)`` accuracy per factor
        factor_n: ``(16,)`` images per factor
        expected: ``(16,)`` the trend's accuracy at this overall accuracy
        z: ``(16,)`` residual in units of the cloud's spread
    """

    n: int
    accuracy: float
    factor_accuracy: np.ndarray
    factor_n: np.ndarray
    expected: np.ndarray
    z: np.ndarray


@dataclass(frozen=True)
class ContextResult:
    """Prediction fields among published models, per factor.

    Attributes:
        dataset: the dataset's name
        groups: the reference groups
        which: ``top`` or ``multi`` factor labels
        correct: the correctness mode (``real`` is in ``paper`` mode, as
            the tables)
        within: the meta-class, or None
        models: the reference models' names
        model_groups: the group of each reference model
        average: ``(m,)`` their overall accuracy
        accuracy: ``(m, 16)`` their factor accuracies
        fits: per factor a :class:`~imagenetx.metrics.trends.CloudFit`
        users: ``{field: UserPoint}``
    """

    dataset: str
    groups: Tuple[str, ...]
    which: str
    correct: str
    within: Optional[str]
    models: Tuple[str, ...]
    model_groups: Tuple[str, ...]
    average: np.ndarray
    accuracy: np.ndarray
    fits: Tuple[CloudFit, ...]
    users: Dict[str, UserPoint]

    @property
    def factors(self) -> tuple:
        """The 16 factors, in column order."""
        return FACTORS

    def to_dict(self) -> dict:
        """JSON-ready (NaN becomes None)::

            {"dataset", "groups", "which", "correct", "real_mode", "within",
             "factors", "unusual_z",
             "reference": {"models", "groups", "average", "accuracy"},
             "trends": {FACTOR: {"slope", "intercept", "spread", "n",
                                 "spearman"}},
             "users": {FIELD: {"n", "accuracy", "factors": {FACTOR:
                 {"n", "accuracy", "expected", "residual", "z"}}}}}
        """
        users = {}
        for field, u in self.users.items():
            users[field] = {
                "n": u.n,
                "accuracy": to_json(u.accuracy),
                "factors": {
                    f: {"n": int(u.factor_n[k]),
                        "accuracy": to_json(u.factor_accuracy[k]),
                        "expected": to_json(u.expected[k]),
                        "residual": to_json(u.factor_accuracy[k] - u.expected[k]),
                        "z": to_json(u.z[k])}
                    for k, f in enumerate(FACTORS)
                },
            }
        return {
            "dataset": self.dataset,
            "groups": list(self.groups),
            "which": self.which,
            "correct": self.correct,
            "real_mode": "paper" if self.correct == "real" else None,
            "within": self.within,
            "factors": list(FACTORS),
            "unusual_z": UNUSUAL_Z,
            "reference": {
                "models": list(self.models),
                "groups": list(self.model_groups),
                "average": _floats(self.average),
                "accuracy": [_floats(row) for row in self.accuracy],
            },
            "trends": {
                f: {"slope": to_json(fit.slope),
                    "intercept": to_json(fit.intercept),
                    "spread": to_json(fit.spread), "n": fit.n,
                    "spearman": to_json(fit.spearman)}
                for f, fit in zip(FACTORS, self.fits)
            },
            "users": users,
        }


def _floats(values) -> list:
    return [to_json(float(v)) for v in values]


def _table_settings(samples, s: Settings) -> Tuple[str, str, Optional[str], Settings]:
    """The tables' labelling, correctness and meta-class for settings, and
    the settings that score the user's fields like the tables."""
    benchmark = get_benchmark(samples, s.benchmark, s)
    if benchmark.name != "imagenet_x":
        raise ImageNetXError(
            f"The reference tables are ImageNet-X's (class, metaclass, real "
            f"correctness) and dataset '{samples._dataset.name}' is a "
            f"{benchmark.title} dataset: there is no correctness mode in "
            "common; use an ImageNet-X dataset")
    slicing = s.slicing or "top_factor"
    if slicing not in SLICING_WHICH:
        raise ImageNetXError(
            f"The reference tables are per factor: use `slicing=top_factor` "
            f"or `slicing=factors`, not '{slicing}'")
    correct = s.correct or "class"
    if correct not in ERROR_TYPES:
        raise ImageNetXError(
            f"The authors' tables have no correctness '{correct}': they are "
            f"scored with {', '.join(ERROR_TYPES)} (ReaL in paper mode); pass "
            "`correct` with one of those")
    if s.include_prototypes:
        raise ImageNetXError(
            "The reference tables leave the 3,000 prototype images out: "
            "drop `include_prototypes=True`")
    if s.by is not None:
        raise ImageNetXError("context has no per-group tables: drop `by`")
    within = None
    if s.within is not None:
        if s.within[0] != "metaclass":
            raise ImageNetXError(
                "The reference tables are overall or per meta-class: use "
                f"`within=metaclass=M`, not '{s.within[0]}'")
        within = s.within[1]
    # the tables count an empty ReaL set wrong
    scoring = replace(s, slicing=slicing, correct=correct, intervals=False,
                      real_mode="paper" if correct == "real" else s.real_mode)
    return SLICING_WHICH[slicing], correct, within, scoring


def reference_cloud(samples, pred_fields, groups: Sequence[str] = ("imagenet_testbed",),
                    settings: Settings = None, results_dir: str = None,
                    **kwargs) -> ContextResult:
    """Places prediction fields among the published models of ``groups``.

    Args:
        samples: a dataset, view, or dataset name (ImageNet-X)
        pred_fields: one prediction field or a list of them
        groups (("imagenet_testbed",)): reference groups
            (:data:`~imagenetx.benchmarks.imagenet_x.reference.GROUPS`);
            rows of several groups are all kept (a model name in two groups
            is two evaluations)
        settings (None): a :class:`Settings` with keyword overrides:
            ``slicing`` (``top_factor`` / ``factors``),
            ``correct`` (``class``, ``metaclass``, ``real``: scored in
            ``paper`` mode, as the tables), ``within=("metaclass", M)``
        results_dir (None): a local copy of the authors' ``results`` folder

    Raises:
        ImageNetXError: unknown group, missing or malformed table, settings
            the tables do not cover, or the usual analysis errors
    """

    s = Settings.create(settings, **kwargs)
    samples = get_dataset(samples)
    if isinstance(groups, str):
        groups = [groups]
    groups = tuple(dict.fromkeys(groups))
    if not groups:
        raise ImageNetXError("Name at least one reference group")
    which, correct, within, scoring = _table_settings(samples, s)
    for g in groups:
        check_choices(g, which, correct)

    names, owners, average, accuracy = [], [], [], []
    for g in groups:
        t = read_reference(g, which, correct, metaclass=within is not None,
                           results_dir=results_dir)
        keep = t.is_model()
        if within is not None:
            keep &= np.array([m == within for m in t.metaclass])
            if not keep.any():
                raise ImageNetXError(
                    f"Reference table '{t.path}' has no row of meta-class "
                    f"'{within}'")
        names += [m for m, k in zip(t.models, keep) if k]
        owners += [g] * int(keep.sum())
        average.append(t.average[keep])
        accuracy.append(t.accuracy[keep])
    average = np.concatenate(average)
    accuracy = np.concatenate(accuracy)
    n_all, n_factor = table_counts(which, within)
    fits = tuple(fit_cloud(average, accuracy[:, k], n_all, n_factor[k])
                 for k in range(len(FACTORS)))

    p = prepare(samples, pred_fields, scoring)
    if tuple(p.slicing.values) != FACTORS:
        raise ImageNetXError(
            f"Slicing '{p.slicing.name}' does not list the 16 factors in the "
            "tables' order")
    users = {}
    for field in p.correct:
        table = p.table(field)
        acc = table.slice_accuracy
        x = np.full(len(FACTORS), table.accuracy)
        users[field] = UserPoint(
            n=int(table.n_total), accuracy=float(table.accuracy),
            factor_accuracy=acc, factor_n=np.asarray(table.n),
            expected=np.array([f.expected(table.accuracy) for f in fits], float),
            z=np.array([f.residual_z(xi, yi, table.n_total, ni)
                        for f, xi, yi, ni in zip(fits, x, acc, table.n)], float),
        )
    return ContextResult(p.dataset_name, groups, which, correct, within,
                         tuple(names), tuple(owners), average, accuracy, fits,
                         users)
