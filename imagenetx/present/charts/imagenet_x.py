"""ImageNet-X's own chart in the App's panel: the paper's Figure 4, the
user's fields among the ImageNet testbed's published models; a click on a
field's point shows its mistakes on that factor."""

from imagenetx.analysis.context import reference_cloud
from imagenetx.present.charts import Chart, fmt, mistakes_drill
from imagenetx.present.figures import context_chart

#: the published models of the chart
CONTEXT_GROUPS = ("imagenet_testbed",)


def _compute(view, fields, settings):
    return reference_cloud(view, fields, CONTEXT_GROUPS, **settings).to_dict()


def context_summary(result: dict) -> str:
    """Per field: accuracy and the factors unusual for that accuracy."""
    lines = []
    for field, user in result["users"].items():
        weak = sorted(((f, e["z"]) for f, e in user["factors"].items()
                       if e["z"] is not None and abs(e["z"]) >= result["unusual_z"]),
                      key=lambda fz: fz[1])
        listing = ", ".join(f"{f} (z {z:+.1f})" for f, z in weak) or "none"
        lines.append(f"- **{field}**: accuracy {fmt(user['accuracy'])}; unusual "
                     f"for its accuracy: {listing}")
    return "\n".join(lines)


PUBLISHED = Chart(
    name="published models",
    compute=_compute,
    figure=context_chart,
    summary=context_summary,
    click=mistakes_drill,
    hint="Grey: the ImageNet testbed's published models (hover: name). Click a "
         "field's point to show its mistakes on that factor.",
    slice_title="factor",
    click_key="id",  # a field's point carries its factor as its plotly id
)
