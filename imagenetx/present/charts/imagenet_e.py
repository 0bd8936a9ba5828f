"""ImageNet-E's chart in the App's panel: each edit's paired top-1 drop
against the same groups' originals; a click shows the pairs it broke."""

from imagenetx.analysis.paired import broken_pairs_view, paired_scores
from imagenetx.present.charts import Chart, Drill, fmt
from imagenetx.present.figures import paired_chart
from imagenetx.present.formatting import paired_factor_table


def _compute(view, fields, settings):
    return paired_scores(view, fields,
                         by_factor=view.has_field("imagenetx.factors")).to_dict()


def paired_summary(result: dict) -> str:
    """Per field: the worst edit, then the drop per factor of the source
    image and edit as a markdown table (when the dataset has factors)."""
    lines = []
    for field, model in result["models"].items():
        rows = [(s, r) for s, r in model["slices"].items() if r["drop"] is not None]
        if not rows:
            continue
        worst, r = max(rows, key=lambda sr: sr[1]["drop"])
        lines.append(f"- **{field}**: worst edit **{worst}**, top-1 {fmt(r['top1_original'])} "
                     f"-> {fmt(r['top1'])} on {r['n']:,} pairs, flip rate "
                     f"{fmt(r['flip_rate'])}")
        if model["factors"]:
            lines += ["", f"Drop (points) of **{field}** per factor of the source image:",
                      "", paired_factor_table(result, field), ""]
    return "\n".join(lines)


def _broken_pairs(view, field, slice_name, settings) -> Drill:
    shown = broken_pairs_view(view, field, slice_name)
    return Drill(shown, len(shown) // 2, unit="groups",
                 what="gets right on the original and wrong on the edit (each pair: "
                      "original, then edit)")


PAIRED = Chart(
    name="edits (paired)",
    compute=_compute,
    figure=paired_chart,
    summary=paired_summary,
    click=_broken_pairs,
    hint="Bars: top-1 drop of each edit against the same images' originals. Click "
         "a bar to show the pairs whose original the model gets right and whose "
         "edit it gets wrong.",
    slice_title="edit",
    uses_settings=False,
)
