"""The effective-robustness chart of the App's panel, on the datasets of a
shift with a testbed line (ImageNetV2, -Sketch, -A, -R, -C, ObjectNet): the
testbed's models, the line of its standard models and its band, and each
field placed by its top-1 here against its clean top-1 on the ImageNet val
dataset holding the same field; a click on a field's star shows its
mistakes here."""

from imagenetx.analysis import mistakes_view
from imagenetx.analysis.effective_robustness import shift_chart_data
from imagenetx.present.charts import Chart, Drill
from imagenetx.present.robustness import effective_robustness_chart


def _compute(view, fields, settings):
    return shift_chart_data(view, fields)


def _figure(result: dict) -> tuple:
    return effective_robustness_chart(result["cloud"], result["results"])


def robustness_summary(result: dict) -> str:
    """Per field: its top-1 here and on clean val, the line's prediction
    and its effective robustness with the band; or why it is not placed."""
    shift = result["shift"]
    lines = []
    for res in result["results"]:
        row = res["shifts"].get(shift)
        if row is None:
            continue
        band = row.get("interval")
        within = (f" [{band[0]:+.2f}, {band[1]:+.2f}]" if band else "")
        lines.append(
            f"- **{res['model']}**: top-1 {row['top1']:.2f} % on {row['n_shift']:,} images "
            f"here, {row['clean_top1']:.2f} % on `{res['source']}` ({row['x_column']}); the "
            f"line predicts {row['predicted_top1']:.2f} %: effective robustness "
            f"**{row['effective_robustness']:+.2f} points**{within}")
    for field, why in result["missing"].items():
        lines.append(f"- **{field}**: not placed: {why}")
    cloud = result["cloud"]
    lines.append(f"- the line: {cloud['n']} standard models of the ImageNet testbed, "
                 f"{cloud['x_column']} against {cloud['y_column']} (logit axes)")
    return "\n".join(lines)


def _mistakes(view, field, value, settings) -> Drill:
    shown = mistakes_view(view, field)
    return Drill(shown, len(shown), title="this shift")


EFFECTIVE_ROBUSTNESS = Chart(
    name="effective robustness",
    compute=_compute,
    figure=_figure,
    summary=robustness_summary,
    click=_mistakes,
    hint="Stars: your fields, their top-1 here against their top-1 on ImageNet val; the "
         "line: what the testbed's standard models of that clean accuracy reach. Above it: "
         "more robust than its accuracy predicts. Click a star to show its mistakes here.",
    uses_settings=False,
)
