"""Slice discovery on a view: the conjunctions of slicings (ImageNet-X
factors x meta-class x class, or any categorical field) where a model errs
far above its average, each one a click from its mistakes.

The columns come from :func:`~imagenetx.analysis.engine.prepare` (one query,
the same images and correctness as every other analysis), the memberships
from the benchmark's slicings, the search from
:func:`imagenetx.metrics.discovery.find_slices`.
"""

from dataclasses import dataclass
from typing import Sequence, Tuple, Union

import numpy as np

from imagenetx.analysis.engine import prepare
from imagenetx.analysis.settings import Settings
from imagenetx.benchmarks import get_benchmark
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.discovery import (
    ALPHA,
    MAX_ORDER,
    MIN_SUPPORT,
    SCORES,
    TOP_K,
    FoundSlice,
    SliceSearch,
    find_slices,
)
from imagenetx.store.datasets import get_dataset


@dataclass(frozen=True)
class DiscoveryResults:
    """The slices :func:`discover_slices` found.

    Attributes:
        samples: what was searched (dataset, view or name)
        dataset: the dataset's name
        pred_field: the prediction field
        settings: the analysis settings (correctness, which images count)
        correct: the label space's name
        slicings: the slicings intersected, in order
        search: the :class:`~imagenetx.metrics.discovery.SliceSearch`
    """

    samples: object
    dataset: str
    pred_field: str
    settings: Settings
    correct: str
    slicings: Tuple[str, ...]
    search: SliceSearch

    @property
    def slices(self) -> Tuple[FoundSlice, ...]:
        """The slices found, best first."""
        return self.search.slices

    def mistakes_view(self, rank: int = 1):
        """The mistakes of the ``rank``-th slice (1: the best), as
        :func:`slice_mistakes_view`."""
        if not 1 <= rank <= len(self.slices):
            raise ImageNetXError(
                f"No slice ranked {rank}: {len(self.slices)} were found")
        return slice_mistakes_view(self.samples, self.pred_field,
                                   self.slices[rank - 1], self.settings)

    def to_dict(self) -> dict:
        """JSON-ready: the dataset, field and settings, and the search's
        :meth:`~imagenetx.metrics.discovery.SliceSearch.to_dict`."""
        s = self.settings
        return {
            "dataset": self.dataset,
            "pred_field": self.pred_field,
            "slicings": list(self.slicings),
            "correct": self.correct,
            "real_mode": s.real_mode,
            "include_prototypes": s.include_prototypes,
            "within": list(s.within) if s.within else None,
            **self.search.to_dict(),
        }


def _slicing_names(samples, slicings, settings: Settings) -> list:
    if isinstance(slicings, str):
        slicings = [slicings]
    names = list(slicings or ())
    if not names:
        benchmark = get_benchmark(samples, settings.benchmark, settings)
        names = list(benchmark.discovery_slicings)
        if not names:
            raise ImageNetXError(
                f"Dataset '{samples._dataset.name}' is not a known benchmark's: "
                "name the slicings to intersect, categorical fields such as "
                "`slicings=tags,my_field`")
    if len(set(names)) != len(names):
        raise ImageNetXError(f"Slicings repeat: {', '.join(names)}")
    return names


def discover_slices(samples, pred_field: str, slicings: Sequence[str] = None,
                    max_order: int = MAX_ORDER, min_support: int = MIN_SUPPORT,
                    top_k: int = TOP_K, score: str = "bound",
                    alpha: float = ALPHA, settings: Settings = None,
                    **kwargs) -> DiscoveryResults:
    """The conjunctions of slices where a prediction field errs most above
    its average (see :mod:`imagenetx.metrics.discovery`).

    Args:
        samples: a dataset, view, or dataset name
        pred_field: the prediction field
        slicings (None): the slicings to intersect: the benchmark's (e.g.
            ``top_factor``, ``factors``, ``metaclass``, ``class``) or
            categorical fields; None: the benchmark's default (ImageNet-X:
            factors, metaclass, class)
        max_order (3): the most slices a conjunction intersects
        min_support (20): the fewest images a reported slice holds
        top_k (10): how many slices to report
        score ("bound"): ``"bound"`` (Bonferroni lower bound on the error
            ratio) or ``"sliceline"`` (SliceLine's score, with ``alpha``)
        alpha (0.95): SliceLine's error/size trade-off
        settings (None): the analysis :class:`Settings` (``correct``,
            ``real_mode``, ``within``, ``include_prototypes``, intervals...),
            with keyword overrides

    Returns:
        a :class:`DiscoveryResults`

    Raises:
        ImageNetXError: for an unknown slicing or field, a missing
            prediction field, or settings that cannot hold (e.g. a minimum
            support larger than the images searched)
    """
    if not pred_field or not isinstance(pred_field, str):
        raise ImageNetXError(
            "Pass one prediction field to search, e.g. `pred_field=resnet50`")
    if score not in SCORES:
        raise ImageNetXError(f"Unknown score '{score}': use one of {', '.join(SCORES)}")
    for label, value in (("max order", max_order), ("top", top_k),
                         ("min support", min_support)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ImageNetXError(f"The {label} must be a whole number of at "
                                 f"least 1, not {value!r}")
    if not 0 < alpha <= 1:
        raise ImageNetXError(f"alpha must lie in (0, 1], not {alpha}")
    samples = get_dataset(samples)
    s = Settings.create(settings, **kwargs)
    names = _slicing_names(samples, slicings, s)
    p = prepare(samples, [pred_field], s, extra_slicings=names[1:],
                slicing=names[0])
    keep = p.counted[pred_field]
    n = int(keep.sum())
    if min_support > n:
        raise ImageNetXError(
            f"The min support {min_support:,} is larger than the {n:,} images "
            f"'{pred_field}' is scored on in '{p.dataset_name}' (this view): "
            "pass a smaller `min_support`")
    memberships = {p.slicing.name: (p.slicing, p.membership), **p.extra}
    search = find_slices(
        p.correct[pred_field][keep],
        [(name, sl.values, m[keep]) for name, (sl, m) in memberships.items()],
        max_order=max_order, min_support=min_support, top_k=top_k,
        score=score, alpha=alpha, intervals=p.settings.intervals,
        resamples=s.resamples, seed=s.seed, level=s.level)
    return DiscoveryResults(samples, p.dataset_name, pred_field, p.settings,
                            p.label_space.name, tuple(memberships), search)


def slice_mistakes_view(samples, pred_field: str,
                        predicates: Union[FoundSlice, Sequence[Tuple[str, object]]],
                        settings: Settings = None, **kwargs):
    """The samples of a conjunction of slices that ``pred_field`` gets
    wrong (same images and correctness as :func:`discover_slices`: the
    count is the slice's ``errors``).

    Args:
        samples: a dataset, view, or dataset name
        pred_field: the prediction field
        predicates: a :class:`~imagenetx.metrics.discovery.FoundSlice`, or
            ``[(slicing, value), ...]``, e.g. ``[("factors", "texture"),
            ("metaclass", "dog")]``
        settings (None): as in :func:`discover_slices`, with keyword
            overrides

    Returns:
        a :class:`fiftyone.core.view.DatasetView` selecting those samples
    """
    if isinstance(predicates, FoundSlice):
        predicates = predicates.predicates
    predicates = list(predicates or ())
    if not predicates:
        raise ImageNetXError("Name at least one (slicing, value) of the slice")
    kwargs["intervals"] = False
    names = list(dict.fromkeys(name for name, _ in predicates))
    p = prepare(samples, [pred_field], settings, ids=True,
                extra_slicings=names[1:], slicing=names[0], **kwargs)
    memberships = {p.slicing.name: (p.slicing, p.membership), **p.extra}
    wrong = p.counted[pred_field] & ~p.correct[pred_field]
    for name, value in predicates:
        slicing, membership = memberships[name]
        found = slicing.lookup(value)
        if found is None:
            raise ImageNetXError(
                f"Unknown {slicing.label} '{value}': use one of "
                f"{', '.join(map(str, slicing.values[:20]))}"
                + (", ..." if len(slicing.values) > 20 else ""))
        wrong &= membership[:, slicing.index()[found]]
    return p.view.select([i for i, w in zip(p.ids, wrong) if w])
