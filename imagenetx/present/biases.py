"""The biases-against-generalization report: one HTML page (the grid of
:func:`~imagenetx.present.figures.bias_grid`, the tau table, the user's
ranks) and its CSV beside it."""

import html
from pathlib import Path
from typing import List

from imagenetx.disk import write_file
from imagenetx.errors import ImageNetXError
from imagenetx.present.figures import bias_grid
from imagenetx.present.report import DISK_ADVICE, _html_table, _write_csv


def tau_rows(result: dict) -> List[dict]:
    """Kendall's tau per (bias, measure) over the published models."""
    return [{"bias": p["bias"], "measure": p["measure"], "tau": p["tau"],
             "p_value": p["p_value"], "n": p["n"]} for p in result["pairs"]]


def rank_rows(result: dict) -> List[dict]:
    """Each user model's value and rank on each bias and measure."""
    return [{"model": label, "name": name, "value": v["value"], "rank": v["rank"],
             "of": v["of"], "percentile": v["percentile"]}
            for label, values in result["users"].items() for name, v in values.items()]


def check_out(out: str) -> None:
    """Raises ImageNetXError unless ``out`` is an .html path in an existing
    folder (the rules of ``imagenetx report --out``)."""
    path = Path(out)
    if path.suffix.lower() not in (".html", ".htm"):
        raise ImageNetXError(
            f"`out={out}` is not an .html path: name the page, e.g. `out=biases.html`")
    if not path.absolute().parent.is_dir():
        raise ImageNetXError(
            f"The folder of `out={out}` does not exist: create "
            f"{path.absolute().parent} first or write the report elsewhere")


def write_bias_report(comparison, out: str) -> List[str]:
    """Writes ``out`` (HTML, plotly.js inlined) and ``<stem>.csv`` (one row
    per bias, measure and model, :meth:`BiasComparison.rows`).

    Returns:
        the paths written

    Raises:
        ImageNetXError: for an ``out`` that is not .html or whose folder
            does not exist
    """
    import plotly.graph_objects as go

    result = comparison.to_dict()
    check_out(out)
    out_path = Path(out)
    csv_path = str(out_path.with_suffix(".csv"))
    _write_csv(csv_path, comparison.rows())
    traces, layout = bias_grid(result)
    figure = go.Figure(data=traces, layout=layout).to_html(
        full_html=False, include_plotlyjs=True)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in result["notes"])
    page = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Biases against generalization</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1400px; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; }}
td, th {{ border: 1px solid #ddd; padding: 3px 8px; text-align: left; }}
th {{ background: #f4f4f4; }}
</style></head><body>
<h1>Biases against generalization among published models</h1>
<p>{len(result["models"])} models of Gavrikov &amp; Keuper, "Can Biases in ImageNet Models
Explain Generalization?" (CVPR 2024), {html.escape(result["population_title"])}, from
{html.escape(result["source"])}; Kendall's tau over them per panel; your models as stars.</p>
{f"<ul>{notes}</ul>" if notes else ""}
<section><h2>Scatter</h2>{figure}</section>
<section><h2>Kendall's tau</h2>{_html_table(tau_rows(result))}</section>
<section><h2>Your models' ranks (1 = highest)</h2>{_html_table(rank_rows(result))}</section>
</body></html>"""
    write_file(str(out_path), page, DISK_ADVICE)
    return [str(out_path), csv_path]


def format_biases(result: dict) -> str:
    """Text: the tau table (a row per bias, a column per measure) and each
    user model's values and ranks."""
    measures = list(result["measures"])
    taus = {(p["bias"], p["measure"]): p["tau"] for p in result["pairs"]}
    width = max(len(b) for b in result["biases"]) + 2
    # each column at least two spaces wider than its name, so names never run together
    cols = [max(12, len(m) + 2) for m in measures]
    lines = [f"Kendall's tau over {len(result['models'])} published models "
             f"({result['population_title']}):",
             " " * width + "".join(f"{m:>{w}}" for m, w in zip(measures, cols))]
    for b in result["biases"]:
        lines.append(f"{b:<{width}}" + "".join(
            f"{'n/a' if taus[(b, m)] is None else format(taus[(b, m)], '+.3f'):>{w}}"
            for m, w in zip(measures, cols)))
    for label, values in result["users"].items():
        lines.append(f"\n{label} (rank among the published models, 1 = highest):")
        for name, v in values.items():
            if v["value"] is not None:
                lines.append(f"  {name:<{width}} {v['value']:10.4f}   "
                             f"rank {v['rank']} of {v['of']}")
    for note in result["notes"]:
        lines.append(f"note: {note}")
    return "\n".join(lines)
