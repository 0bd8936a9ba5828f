"""Augmentation spill-over: the ImageNet-X paper's section 4.3.2 and
Figure 6, from the authors' sweep tables.

For each run of a sweep (a ResNet50 trained with one augmentation
strength), two measures per factor come from its table row:

-   error ratio: ``(1 - acc(factor)) / (1 - acc)`` (what Figure 6 plots)
-   prevalence shift: the factor's share among the run's mistakes against
    its share among the images, minus 1 (the toolkit's ``Prevalence``; the
    paper's text). Mistakes per factor are ``n(factor) x (1 - acc(factor))``
    with ``n(factor)`` the factor's images among the tables' images
    (validation, prototypes left out), from the packaged annotations.

Each measure's trend against strength is tested per factor across the
independent runs (Spearman's rank correlation by default, or the OLS
slope's t-test), with Holm's correction over the 16 factors. As the
authors' ``plots.py`` does, strengths with fewer than
:data:`MIN_RUNS_PER_STRENGTH` runs are left out (and listed).
"""

from dataclasses import dataclass
from typing import Dict, List, Tuple

import numpy as np

from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.benchmarks.imagenet_x.reference import read_reference, table_counts
from imagenetx.benchmarks.imagenet_x.sweeps import get_sweep, run_strengths
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.slices import prevalence_shift_counts
from imagenetx.metrics.stats import holm, to_json
from imagenetx.metrics.trends import TREND_METHODS, StrengthTrend, strength_trend

#: the per-run measures
MEASURES = ("prevalence_shift", "error_ratio")

#: strengths with fewer runs are left out (the authors keep "> 4")
MIN_RUNS_PER_STRENGTH = 5

#: Holm-corrected p-values below this count as a significant trend
ALPHA = 0.05


def run_measures(accuracy: np.ndarray, average: np.ndarray,
                 which: str) -> Dict[str, np.ndarray]:
    """Both measures of table rows.

    Args:
        accuracy: ``(runs, 16)`` factor accuracies
        average: ``(runs,)`` overall accuracies
        which: ``top`` or ``multi`` (for the factor counts)

    Returns:
        ``{"prevalence_shift": (runs, 16), "error_ratio": (runs, 16)}``
    """
    n = table_counts(which)[1].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (1 - accuracy) / (1 - average)[:, None]
    _, _, shift = prevalence_shift_counts(n * (1 - accuracy), np.broadcast_to(n, accuracy.shape))
    return {"prevalence_shift": shift, "error_ratio": ratio}


@dataclass(frozen=True)
class FactorTrend:
    """One factor's trend in one measure.

    Attributes:
        trend: the test (:class:`~imagenetx.metrics.trends.StrengthTrend`)
        p_holm: its p-value, Holm-corrected over the 16 factors
        weakest, strongest: the measure's mean over the runs of the
            weakest and of the strongest strength kept
    """

    trend: StrengthTrend
    p_holm: float
    weakest: float
    strongest: float

    @property
    def direction(self) -> int:
        """+1 (rises with strength), -1 (falls), 0 (not significant at
        :data:`ALPHA` after Holm)."""
        if not self.p_holm < ALPHA:
            return 0
        return 1 if self.trend.statistic > 0 else -1


@dataclass(frozen=True)
class SpilloverResult:
    """A sweep's per-factor trends.

    Attributes:
        sweep, which, correct, method: the inputs
        strength_title: what the strength means
        runs: the runs kept
        strengths: ``(runs,)`` their strengths
        unparsable: runs whose name carries no strength
        sparse: ``(run, strength)`` of runs left out because their strength
            has fewer than :data:`MIN_RUNS_PER_STRENGTH` runs
        values: ``{measure: (runs, 16)}``
        trends: ``{measure: (FactorTrend per factor)}``
    """

    sweep: str
    which: str
    correct: str
    method: str
    strength_title: str
    runs: Tuple[str, ...]
    strengths: np.ndarray
    unparsable: Tuple[str, ...]
    sparse: Tuple[Tuple[str, float], ...]
    values: Dict[str, np.ndarray]
    trends: Dict[str, Tuple[FactorTrend, ...]]

    @property
    def varies(self) -> bool:
        """Whether the kept runs have more than one strength."""
        return len(np.unique(self.strengths)) > 1

    def rows(self) -> List[dict]:
        """One row per measure and factor (the CSV table)."""
        out = []
        for measure, trends in self.trends.items():
            for f, t in zip(FACTORS, trends):
                out.append({
                    "sweep": self.sweep, "measure": measure, "factor": f,
                    "method": t.trend.method, "n_runs": t.trend.n,
                    "statistic": to_json(t.trend.statistic),
                    "p": to_json(t.trend.pvalue), "p_holm": to_json(t.p_holm),
                    "slope": to_json(t.trend.slope),
                    "change": to_json(t.trend.change),
                    "weakest": to_json(t.weakest),
                    "strongest": to_json(t.strongest),
                    "direction": t.direction,
                })
        return out

    def to_dict(self) -> dict:
        """JSON-ready::

            {"sweep", "which", "correct", "method", "alpha",
             "strength_title", "min_runs_per_strength", "factors",
             "runs", "strengths", "unparsable", "sparse": [[run, strength]],
             "values": {measure: [[per factor] per run]},
             "trends": [rows as :meth:`rows`]}
        """
        return {
            "sweep": self.sweep, "which": self.which, "correct": self.correct,
            "method": self.method, "alpha": ALPHA,
            "strength_title": self.strength_title,
            "min_runs_per_strength": MIN_RUNS_PER_STRENGTH,
            "factors": list(FACTORS),
            "runs": list(self.runs),
            "strengths": [float(s) for s in self.strengths],
            "unparsable": list(self.unparsable),
            "sparse": [[r, float(s)] for r, s in self.sparse],
            "values": {m: [[to_json(float(x)) for x in row] for row in v]
                       for m, v in self.values.items()},
            "trends": self.rows(),
        }


def spillover(sweep: str, which: str = "top", correct: str = "class",
              method: str = "spearman", results_dir: str = None) -> SpilloverResult:
    """Per-factor trends of prevalence shift and error ratio against
    augmentation strength over a sweep's runs.

    Args:
        sweep: ``crop``, ``colorjitter``, ``gaussian_blur``,
            ``colorjitter_crop`` or ``adaptive_colorjitter`` (the last two
            hold one setting: no trend)
        which ("top"): ``top`` or ``multi`` factor labels
        correct ("class"): ``class``, ``metaclass`` or ``real``
        method ("spearman"): ``spearman`` or ``ols``
        results_dir (None): a local copy of the authors' ``results`` folder

    Raises:
        ImageNetXError: unknown sweep or method, missing or malformed table
    """
    info = get_sweep(sweep)
    if method not in TREND_METHODS:
        raise ImageNetXError(
            f"Unknown trend test '{method}': use one of {', '.join(TREND_METHODS)}")
    table = read_reference(sweep, which, correct, results_dir=results_dir)
    keep = table.is_model()
    strengths, unparsable = run_strengths(table.models, info)
    keep &= np.isfinite(strengths)
    values, counts = np.unique(strengths[keep], return_counts=True)
    few = set(values[counts < MIN_RUNS_PER_STRENGTH].tolist())
    sparse = tuple((m, float(s)) for m, s, k in zip(table.models, strengths, keep)
                   if k and s in few)
    keep &= ~np.isin(strengths, list(few))
    if not keep.any():
        raise ImageNetXError(
            f"Sweep '{sweep}' ({table.path}) has no run with a strength and at "
            f"least {MIN_RUNS_PER_STRENGTH} runs per strength")
    s = strengths[keep]
    measures = run_measures(table.accuracy[keep], table.average[keep], which)
    lo, hi = s == s.min(), s == s.max()
    trends = {}
    for measure, v in measures.items():
        tests = [strength_trend(s, v[:, k], method) for k in range(len(FACTORS))]
        p_holm = holm(np.array([t.pvalue for t in tests]))
        trends[measure] = tuple(
            FactorTrend(t, float(p), float(np.nanmean(v[lo, k])),
                        float(np.nanmean(v[hi, k])))
            for k, (t, p) in enumerate(zip(tests, p_holm)))
    return SpilloverResult(
        sweep, which, correct, method, info.title,
        tuple(m for m, k in zip(table.models, keep) if k), s,
        tuple(unparsable), sparse, measures, trends)


@dataclass(frozen=True)
class Finding:
    """A directional claim of the paper about a sweep.

    Attributes:
        sweep, factor, measure: what it is about
        direction: -1 (the measure falls with strength: more robust) or +1
        text: the paper's words
        core: one of the findings the issue asks to reproduce
    """

    sweep: str
    factor: str
    measure: str
    direction: int
    text: str
    core: bool = True


#: the paper's stated directional findings (section 4.3.2 and Figure 6)
PAPER_FINDINGS = (
    Finding("crop", "pose", "prevalence_shift", -1,
            "random crop: the prevalence shift decreases for pose"),
    Finding("crop", "partial_view", "prevalence_shift", -1,
            "random crop: the prevalence shift decreases for partial view"),
    Finding("colorjitter", "color", "prevalence_shift", -1,
            "colour jitter: more robust to change in color"),
    Finding("colorjitter", "darker", "prevalence_shift", -1,
            "colour jitter: more robust to darker objects (brightness)"),
    Finding("gaussian_blur", "texture", "prevalence_shift", -1,
            "Gaussian blur: more robust to texture"),
    Finding("gaussian_blur", "pose", "prevalence_shift", 1,
            "Gaussian blur: pose becomes more problematic"),
    Finding("crop", "pattern", "prevalence_shift", -1,
            "random crop: pattern improves as well", core=False),
    Finding("crop", "subcategory", "prevalence_shift", 1,
            "random crop: decrease in robustness for subcategory", core=False),
    Finding("crop", "smaller", "prevalence_shift", 1,
            "random crop (Figure 6 caption): reduces robustness to objects "
            "that appear smaller", core=False),
    Finding("crop", "background", "prevalence_shift", 1,
            "random crop (Figure 6 caption): reduces robustness to "
            "background variations", core=False),
    Finding("crop", "texture", "prevalence_shift", -1,
            "random crop (Figure 6 caption): models become robust towards "
            "background and texture", core=False),
    Finding("colorjitter", "pose", "prevalence_shift", 1,
            "colour jitter: more sensitive to pose variations", core=False),
    Finding("colorjitter", "larger", "prevalence_shift", -1,
            "colour jitter: more robust to larger objects (Figure 6)", core=False),
    Finding("gaussian_blur", "subcategory", "prevalence_shift", -1,
            "Gaussian blur: subcategory has much less impact", core=False),
    Finding("gaussian_blur", "color", "prevalence_shift", -1,
            "Gaussian blur: benefits towards color changes (Figure 6)", core=False),
)


def check_findings(which: str = "top", correct: str = "class",
                   method: str = "spearman", results_dir: str = None,
                   findings=PAPER_FINDINGS) -> List[dict]:
    """Tests the paper's directional findings against the sweep tables.

    Returns:
        one dict per finding: its fields, the observed ``statistic``,
        ``p_holm``, ``weakest``, ``strongest``, ``observed`` direction (+1,
        -1, 0 = no significant trend) and ``agrees``
    """
    results = {}
    out = []
    for f in findings:
        if f.sweep not in results:
            results[f.sweep] = spillover(f.sweep, which, correct, method, results_dir)
        t = results[f.sweep].trends[f.measure][FACTORS.index(f.factor)]
        out.append({
            "sweep": f.sweep, "factor": f.factor, "measure": f.measure,
            "stated": f.direction, "text": f.text, "core": f.core,
            "statistic": t.trend.statistic, "p_holm": t.p_holm,
            "weakest": t.weakest, "strongest": t.strongest,
            "observed": t.direction, "agrees": t.direction == f.direction,
        })
    return out
