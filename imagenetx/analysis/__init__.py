"""Analysis: view -> columns -> metrics.

Every function takes a dataset, view or dataset name, prediction fields and
one :class:`Settings` (or its keywords), reads the view with one query, and
scores predictions through the benchmark's label space (see
:mod:`imagenetx.analysis.engine`).

Which images count: the benchmark's samples (ImageNet-X: annotated images
without the paper's 3,000 prototypes unless ``include_prototypes``;
ImageNet-D: samples with a nuisance), with a ground truth ``class_index``,
and per model those it has a prediction for; for ImageNet-X ``correct="real"``
in ``clean`` mode, those with a non-empty ReaL set.
"""

from imagenetx.analysis.compare import compare_groups, compare_models
from imagenetx.analysis.discovery import (
    DiscoveryResults,
    discover_slices,
    slice_mistakes_view,
)
from imagenetx.analysis.engine import (
    analysis_options,
    compute_ratios,
    mistakes_view,
    prepare,
    slice_accuracies,
    slice_prevalence,
)
from imagenetx.analysis.results import SliceResults
from imagenetx.analysis.settings import Settings
from imagenetx.options import CORRECTNESS, REAL_MODES, WHICH

__all__ = [
    "CORRECTNESS",
    "REAL_MODES",
    "WHICH",
    "analysis_options",
    "Settings",
    "SliceResults",
    "compare_groups",
    "compare_models",
    "compute_ratios",
    "discover_slices",
    "DiscoveryResults",
    "mistakes_view",
    "prepare",
    "slice_accuracies",
    "slice_mistakes_view",
    "slice_prevalence",
]
