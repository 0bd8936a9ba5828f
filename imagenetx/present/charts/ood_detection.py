"""The OOD-detection chart of the App's panel, on ImageNet-O, NINCO and
OpenOOD datasets: which kinds of ID images look OOD to a model, the share
of each ImageNet-X factor's ID images its detector flags at the threshold
keeping 95 % of them; a click on a bar shows those images, lowest score
first."""

from imagenetx.analysis.ood_detection import (
    factor_false_positives,
    flagged_id_view,
    stored_detectors,
)
from imagenetx.present.charts import Chart, Drill
from imagenetx.present.figures import ood_false_positive_chart


def _compute(view, fields, settings):
    return factor_false_positives(view, fields)


def false_positive_summary(result: dict) -> str:
    """Per field: its detector, the ID images it flags, the factor it flags
    most; or why it has no scores."""
    lines = []
    for field, model in result["models"].items():
        rated = [r for r in model["rows"] if r["n"]]
        worst = max(rated, key=lambda r: r["share"]) if rated else None
        others = (f" (also stored: {', '.join(model['others'])})" if model["others"] else "")
        lines.append(
            f"- **{field}**, detector {model['detector']}{others}: flags {model['flagged']:,} "
            f"of {model['n']:,} ID images with a factor ({model['share']:.1%})"
            + (f"; most often those of **{worst['factor']}** ({worst['share']:.1%}, "
               f"{worst['ratio']:.2f}x the overall)" if worst and worst["ratio"] else ""))
    for field, why in result["missing"].items():
        lines.append(f"- **{field}**: {why}")
    return "\n".join(lines)


def _flagged(view, field, value, settings) -> Drill:
    detector = stored_detectors(view, field)[0]  # the one charted
    shown = flagged_id_view(view, field, detector, factor=value)
    return Drill(shown, len(shown), what=f"flags as OOD ({detector})", unit="ID images")


OOD_FALSE_POSITIVES = Chart(
    name="OOD false positives",
    compute=_compute,
    figure=ood_false_positive_chart,
    summary=false_positive_summary,
    click=_flagged,
    hint="Bars: per {slice}, the share of the ID images the detector flags as OOD at the "
         "threshold keeping 95% of them. Click a bar to show those images, lowest score "
         "first.",
    uses_settings=False,
)
