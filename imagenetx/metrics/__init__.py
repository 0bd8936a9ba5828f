"""Metrics: pure numpy/scipy, nothing about FiftyOne.

Every function takes arrays (correct flags, an image x slice membership
matrix, class and group ids, confidences) and returns tables;
:mod:`imagenetx.analysis` pulls those arrays out of a view.

-   :mod:`~imagenetx.metrics.slicing`: :class:`Slicing`, field values ->
    membership matrix
-   :mod:`~imagenetx.metrics.correctness`: exact class, in a set (ReaL),
    same group, argmax over a class subset
-   :mod:`~imagenetx.metrics.slices`: per-slice accuracy and error ratio
    (:class:`SliceTable`), per-group tables, the toolkit's other columns
-   :mod:`~imagenetx.metrics.stats`: bootstrap intervals, McNemar with
    Holm's correction, Alexander-Govern
-   :mod:`~imagenetx.metrics.calibration`: expected calibration error
    (equal-width or equal-mass bins), reliability-diagram bins, Hendrycks'
    RMS calibration error
-   :mod:`~imagenetx.metrics.temperature`: temperature scaling fitted on
    held-out clean logits
-   :mod:`~imagenetx.metrics.effective_robustness`: logit-axis lines, their
    bootstrap band, effective robustness (the testbed's lines themselves:
    :mod:`imagenetx.protocols.effective_robustness`)
-   :mod:`~imagenetx.metrics.ood`: OOD detection (AUROC, FPR@95, AUPR-In
    and -Out under OpenOOD's, NINCO's and Hendrycks' conventions, bootstrap
    intervals, each benchmark's headline)
-   :mod:`~imagenetx.metrics.correlation`: Kendall's tau and rank position
    over a population of models (shape bias among published models)
-   :mod:`~imagenetx.metrics.summary`: reducers and their typed results
-   :mod:`~imagenetx.metrics.trends`: trends across many models (a
    factor's accuracy against overall accuracy; a measure against
    augmentation strength)

The conventions follow the original ``imagenet_x`` toolkit exactly, so the
numbers reproduce the authors' tables.
"""

from imagenetx.metrics.calibration import (
    BIN_SCHEMES,
    ECE_BINS,
    EQUAL_MASS_BINS,
    RMS_BIN_SIZE,
    ReliabilityBins,
    calibration_error,
    expected_calibration_error,
    reliability_bins,
    rms_calibration_error,
    slice_calibration_errors,
)
from imagenetx.metrics.correlation import (
    RankCorrelation,
    RankPosition,
    kendall_tau,
    rank_position,
)
from imagenetx.metrics.correctness import (
    RealSets,
    real_correct,
    restricted_argmax,
    same_group,
)
from imagenetx.metrics.slices import (
    MIN_RELIABLE_N,
    WORST_CLASSES_K,
    SliceTable,
    class_counts,
    cooccurrence,
    group_tables,
    prevalence,
    prevalence_shift,
    prevalence_shift_counts,
    slice_table,
    worst_classes_accuracies,
    worst_classes_accuracy,
)
from imagenetx.metrics.ood import (
    CONVENTIONS,
    TPR_LEVEL,
    Headline,
    OODMetrics,
    imagenet_o_headline,
    ninco_headline,
    ood_metrics,
    openood_headline,
)
from imagenetx.metrics.slicing import Slicing
from imagenetx.metrics.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    INTERVAL_LEVEL,
    MCNEMAR_EXACT_BELOW,
    PairedTest,
    alexander_govern,
    error_ratio_intervals,
    holm,
    mcnemar,
    mcnemar_counts,
)
from imagenetx.metrics.trends import (
    TREND_METHODS,
    CloudFit,
    StrengthTrend,
    fit_cloud,
    strength_trend,
)
from imagenetx.metrics.summary import (
    ErrorRatios,
    ModelSummary,
    Scored,
    SliceStats,
    TableSummary,
    to_json,
)
