"""The cue-conflict benchmark's chart in the App's panel: Geirhos et al.'s
shape-bias plot, a click showing a category's texture-driven decisions."""

from imagenetx.analysis.shape_bias import shape_bias
from imagenetx.benchmarks.cue_conflict.views import texture_decisions_view
from imagenetx.present.charts import Chart, Drill, fmt
from imagenetx.present.figures import shape_bias_chart


def _compute(view, fields, settings):
    return shape_bias(view, fields).to_dict()


def shape_bias_summary(result: dict) -> str:
    """Per field: shape bias and its decisions; the pooled humans."""
    lines = [f"- **{field}**: shape bias {fmt(m['shape_bias'])} ({m['shape']:,} "
             f"shape / {m['texture']:,} texture decisions of {m['n']:,} images)"
             for field, m in result["models"].items()]
    if result.get("humans"):
        lines.append(f"- **humans** (pooled, {len(result['humans']['fields'])} "
                     f"observers): {fmt(result['humans']['shape_bias'])}")
    return "\n".join(lines)


def _texture_decisions(view, field, category, settings) -> Drill:
    shown = texture_decisions_view(view, field, category)
    return Drill(shown, len(shown), what="decides by texture")


SHAPE_BIAS = Chart(
    name="shape bias",
    compute=_compute,
    figure=shape_bias_chart,
    summary=shape_bias_summary,
    click=_texture_decisions,
    hint="Click a marker to show the images of that category that the model "
         "decided by their texture.",
    slice_title="shape category",
    click_key="y",
    uses_settings=False,
)
