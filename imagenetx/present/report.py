"""One self-contained HTML report of error ratios, with its tables as CSV.

The page holds the paper's Figure 1 (error ratio per factor and model, with
intervals and the 1.0 line), its Table 4 (robust and susceptible factors per
meta-class), Figure 2 (factor prevalence, validation vs training) and
Figure 8 (factor co-occurrence). plotly.js is inlined, so the page opens
offline.
"""

import csv
import html
import os
from dataclasses import dataclass


from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx import metrics
from imagenetx.errors import ImageNetXError
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.present.figures import error_ratio_chart
from imagenetx.present.formatting import ratios_rows

#: factors listed per meta-class as robust / susceptible in Table 4
TABLE4_K = 3


@dataclass
class ReportSummary:
    """Where :func:`write_report` wrote the page and its tables."""

    html: str
    csvs: list

    def __str__(self):
        return f"Report written to {self.html} (tables: " + ", ".join(
            os.path.basename(p) for p in self.csvs) + ")"


def write_report(samples, pred_fields, out: str, **ratio_kwargs) -> ReportSummary:
    """Writes the HTML report of prediction fields over a view.

    Args:
        samples: a dataset, view, or dataset name
        pred_fields: one prediction field or a list of them
        out: the path of the HTML page; the CSV tables go beside it, named
            ``<stem>_<table>.csv``
        **ratio_kwargs: the settings of
            :func:`imagenetx.analysis.compute_ratios` (``which``,
            ``correct``, ``real_mode``, ...)

    Returns:
        a :class:`ReportSummary`
    """
    import plotly.graph_objects as go

    from imagenetx.analysis import compute_ratios

    if not out.lower().endswith((".html", ".htm")):
        raise ImageNetXError(
            f"--out '{out}' is not an .html path: name the page, e.g. "
            "--out report.html")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise ImageNetXError(
            f"The folder of --out '{out}' does not exist: create {folder} "
            "first or write the report elsewhere")
    ratios = compute_ratios(samples, pred_fields, by_metaclass=True,
                            **ratio_kwargs)

    traces, layout = error_ratio_chart(ratios)
    figure1 = go.Figure(data=traces, layout=layout)
    susceptible = _table4(ratios)
    prevalence = {
        split: metrics.prevalence(anno.load_split(split).multi).tolist()
        for split in ("val", "train")
    }
    cooccurrence = metrics.cooccurrence(anno.load_split("val").multi)
    cooccurrence = cooccurrence.round(6).tolist()
    figure2 = go.Figure(
        data=[
            go.Bar(name=split, x=list(FACTORS), y=prevalence[split])
            for split in prevalence
        ],
        layout={"barmode": "group", "yaxis": {"title": "share of images",
                "tickformat": ".0%"}, "xaxis": {"tickangle": -40},
                "title": "Factor prevalence (multi-factor labels)"},
    )
    figure8 = go.Figure(
        data=[go.Heatmap(z=cooccurrence, x=list(FACTORS), y=list(FACTORS),
                         colorscale="Blues", zmin=0, zmax=1,
                         hovertemplate="P(%{x} | %{y}) = %{z:.2f}"
                         "<extra></extra>")],
        layout={"title": "Factor co-occurrence in validation: "
                "P(column factor | row factor)", "height": 640,
                "xaxis": {"tickangle": -40}, "yaxis": {"autorange": "reversed"}},
    )

    stem = os.path.splitext(out)[0]
    rows = ratios_rows(ratios)
    csvs = [
        _write_csv(f"{stem}_error_ratios.csv",
                   [r for r in rows if r["metaclass"] == "all"]),
        _write_csv(f"{stem}_metaclass_factors.csv",
                   [r for r in rows if r["metaclass"] != "all"]),
        _write_csv(f"{stem}_table4.csv", susceptible),
        _write_csv(f"{stem}_prevalence.csv", [
            {"factor": f, **{s: prevalence[s][k] for s in prevalence}}
            for k, f in enumerate(FACTORS)]),
        _write_csv(f"{stem}_cooccurrence.csv", [
            {"factor": f, **dict(zip(FACTORS, row))}
            for f, row in zip(FACTORS, cooccurrence)]),
    ]
    page = _page(ratios, [
        ("Error ratio per factor (Figure 1)", figure1.to_html(
            full_html=False, include_plotlyjs=True)),
        ("Robust and susceptible factors per meta-class (Table 4)",
         _html_table(susceptible)),
        ("Factor prevalence (Figure 2)", figure2.to_html(
            full_html=False, include_plotlyjs=False)),
        ("Factor co-occurrence (Figure 8)", figure8.to_html(
            full_html=False, include_plotlyjs=False)),
    ])
    with open(out, "w", encoding="utf-8") as f:
        f.write(page)
    return ReportSummary(out, csvs)


def _table4(ratios: dict) -> list:
    """Per model and meta-class: up to three factors with the lowest error
    ratio below 1 (robust) and the highest above 1 (susceptible), among the
    factors with enough images when there are any."""
    rows = []
    for field, model in ratios["models"].items():
        for mc, entry in model.get("metaclasses", {}).items():
            scored = [
                (f, r["error_ratio"], r["few_images"])
                for f, r in entry["factors"].items()
                if r["error_ratio"] is not None and r["n"] > 0
            ]
            reliable = [s for s in scored if not s[2]] or scored
            ordered = sorted(reliable, key=lambda s: s[1])
            robust = [s for s in ordered if s[1] < 1]
            susceptible = [s for s in ordered[::-1] if s[1] > 1]
            rows.append({
                "model": field,
                "metaclass": mc,
                "n": entry["n"],
                "accuracy": entry["accuracy"],
                "robust": "; ".join(
                    f"{f} ({r:.2f})" for f, r, _ in robust[:TABLE4_K]),
                "susceptible": "; ".join(
                    f"{f} ({r:.2f})" for f, r, _ in susceptible[:TABLE4_K]),
            })
    return rows


def _write_csv(path: str, rows: list) -> str:
    with open(path, "w", newline="") as f:
        if rows:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return path


def _html_table(rows: list) -> str:
    if not rows:
        return "<p>No meta-class has images in this view.</p>"
    head = "".join(f"<th>{html.escape(k)}</th>" for k in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in r.values())
        + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else str(value)


def _page(ratios: dict, sections: list) -> str:
    models = "".join(
        f"<li><b>{html.escape(field)}</b>: accuracy "
        f"{_cell(m['accuracy'])} on {m['n']:,} images, worst factor "
        f"{html.escape(str(m.get('worst_reliable_factor') or m['worst_factor']))}"
        "</li>"
        for field, m in ratios["models"].items()
    )
    settings = (
        f"dataset <code>{html.escape(ratios['dataset'])}</code>, "
        f"{ratios['which']} factors, correct = {ratios['correct']}"
        + (f" ({ratios['real_mode']})" if ratios["correct"] == "real" else "")
        + ", prototypes "
        + ("kept" if ratios["include_prototypes"] else "left out")
    )
    body = "".join(
        f"<section><h2>{html.escape(title)}</h2>{content}</section>"
        for title, content in sections
    )
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>ImageNet-X report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; }}
td, th {{ border: 1px solid #ddd; padding: 3px 8px; text-align: left; }}
th {{ background: #f4f4f4; }}
</style></head><body>
<h1>ImageNet-X: why the models fail</h1>
<p>{settings}. Error ratio = (1 - accuracy on a factor) / (1 - accuracy);
above 1, a model fails more often on images with that factor.</p>
<ul>{models}</ul>
{body}
</body></html>
"""
