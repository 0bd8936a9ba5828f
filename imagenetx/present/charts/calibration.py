"""The calibration chart of the App's panel, offered on every dataset: each
field's reliability diagram over the view (its accuracy per confidence bin
against the diagonal) with its ECE, equal-mass ECE and RMS calibration
error; a click on a point shows the images of that bin the field gets
wrong."""

from imagenetx.analysis.calibration import (
    confidence_bin,
    confidence_mistakes_view,
    reliability_readout,
)
from imagenetx.present.charts import Chart, Drill, fmt
from imagenetx.present.robustness import reliability_chart


def _compute(view, fields, settings):
    return reliability_readout(view, fields, **settings)


def _figure(result: dict) -> tuple:
    return reliability_chart(result["models"], title=f"Reliability ({result['n_bins']} "
                                                     "equal-width bins)")


def calibration_summary(result: dict) -> str:
    """Per field: accuracy, mean confidence, the three calibration errors
    and the worst-calibrated slice."""
    lines = []
    for field, row in result["models"].items():
        if not row["n"]:
            lines.append(f"- **{field}**: no image counted")
            continue
        rated = {v: e for v, e in row["slices"].items() if e is not None}
        worst = max(rated, key=rated.get) if rated else None
        lines.append(
            f"- **{field}**: accuracy {row['accuracy']:.1%}, mean confidence "
            f"{row['confidence']:.1%} on {row['n']:,} images; ECE {fmt(row['ece_equal_width'])} "
            f"({result['n_bins']} equal-width bins), {fmt(row['ece_equal_mass'])} (100 "
            f"equal-mass), RMS {fmt(row['rms_calibration_error'])}"
            + (f"; least calibrated {result['slice_title']} **{worst}** "
               f"(ECE {rated[worst]:.3f})" if worst is not None else ""))
    return "\n".join(lines)


def _bin_mistakes(view, field, value, settings) -> Drill:
    low, high = confidence_bin(value)
    shown = confidence_mistakes_view(view, field, low, high, **settings)
    return Drill(shown, len(shown), title=f"confidence ({low:.3f}, {high:.3f}]")


CALIBRATION = Chart(
    name="calibration",
    compute=_compute,
    figure=_figure,
    summary=calibration_summary,
    click=_bin_mistakes,
    hint="Points: per confidence bin, the share of the images right against their mean "
         "confidence (on the diagonal: calibrated; below it: overconfident). Click a point "
         "to show the images of that bin the model gets wrong.",
    click_key="id",
)
