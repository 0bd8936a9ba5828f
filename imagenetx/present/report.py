"""One self-contained HTML report of error ratios, with its tables as CSV.

The page holds the ImageNet-X paper's figures for any slicing of the view
it is given: Figure 1 (error ratio per slice and model, with intervals and
the 1.0 line), Table 4 (robust and susceptible slices per group, e.g.
meta-class), Figure 2 (slice prevalence in the view; ImageNet-X: validation
vs training) and Figure 8 (co-occurrence, for multi-valued slicings); on a
cue-conflict dataset also the shape-bias plot and table; on a grouped
dataset of edits (ImageNet-E) the paired drop per edit and per ImageNet-X
factor of the source image; with
``context_groups``, Figure 4 (the models among published ones, see
:mod:`imagenetx.analysis.context`); optionally the slices found by slice
discovery; on an OOD-detection dataset (``ood_role``) each field's OOD
detectors (:func:`ood_section`); with ``shifts``, the fields' effective robustness on the ImageNet
testbed's lines (:mod:`imagenetx.analysis.effective_robustness`) and their
calibration under shift. plotly.js is inlined, so the page opens
offline.
"""

import csv
import html
import io
import os
from dataclasses import dataclass

from imagenetx.analysis import Settings, compute_ratios, discover_slices, slice_prevalence
from imagenetx.analysis.context import reference_cloud
from imagenetx.analysis.effective_robustness import field_robustness, shift_cloud
from imagenetx.analysis.calibration import calibration_readout
from imagenetx.analysis.shifts import parse_shifts
from imagenetx.analysis.ood_detection import ROLE_FIELD, id_threshold, score_ood
from imagenetx.analysis.paired import paired_scores
from imagenetx.analysis.published import compare_with_published
from imagenetx.analysis.readouts import readout_notes
from imagenetx.analysis.shape_bias import shape_bias
from imagenetx.benchmarks import get_benchmark
from imagenetx.disk import write_file
from imagenetx.errors import ImageNetXError
from imagenetx.present.figures import (
    context_chart,
    error_ratio_chart,
    ood_score_chart,
    paired_chart,
    published_scatter,
    shape_bias_chart,
)
from imagenetx.present.robustness import (
    effective_robustness_chart,
    reliability_chart,
    robustness_rows,
)
from imagenetx.present.formatting import (
    context_rows,
    describe_settings,
    discovery_rows,
    ood_rows,
    paired_rows,
    ratios_rows,
    shape_bias_csv,
)
from imagenetx.store.datasets import get_dataset

#: factors listed per meta-class as robust / susceptible in Table 4
TABLE4_K = 3

#: what to do about a full disk while a report is written
DISK_ADVICE = "free some space there, or write the report elsewhere (`out`)"


@dataclass
class ReportSummary:
    """Where :func:`write_report` wrote the page and its tables."""

    html: str
    csvs: list

    def __str__(self):
        return f"Report written to {self.html} (tables: " + ", ".join(
            os.path.basename(p) for p in self.csvs) + ")"


def write_report(samples, pred_fields, out: str, settings=None,
                 context_groups=None, results_dir: str = None,
                 discover: bool = False, shifts=None, **ratio_kwargs) -> ReportSummary:
    """Writes the HTML report of prediction fields over a view.

    Args:
        samples: a dataset, view, or dataset name
        pred_fields: one prediction field or a list of them
        out: the path of the HTML page; the CSV tables go beside it, named
            ``<stem>_<table>.csv``
        settings (None), **ratio_kwargs: the settings of
            :func:`imagenetx.analysis.compute_ratios` (``slicing``,
            ``correct``, ``real_mode``, ...); the per-group tables use the
            benchmark's group slicing (ImageNet-X: meta-classes) unless
            ``by`` is given
        context_groups (None): reference groups of the authors' tables
            (e.g. ``["imagenet_testbed"]``): adds the Figure 4 section and
            ``<stem>_context.csv``
        results_dir (None): a local copy of the authors' ``results`` folder
        discover (False): add a slice discovery section (the top
            conjunctions of the benchmark's discovery slicings per field,
            :func:`imagenetx.analysis.discover_slices` with its defaults)
            and its table ``<stem>_discovered_slices.csv``
        shifts (None): ``{shift: dataset}`` or ``KEY=DATASET`` strings (the
            dataset is ImageNet val): adds the effective-robustness section
            (each shift's chart among the testbed's models, the table,
            ``<stem>_effective_robustness.csv``) and the calibration
            section (reliability diagrams, ``<stem>_calibration.csv``)

    Returns:
        a :class:`ReportSummary`
    """
    import plotly.graph_objects as go

    if not out.lower().endswith((".html", ".htm")):
        raise ImageNetXError(
            f"`out={out}` is not an .html path: name the page, e.g. "
            "`out=report.html`")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise ImageNetXError(
            f"The folder of `out={out}` does not exist: create {folder} "
            "first or write the report elsewhere")
    samples = get_dataset(samples)
    settings = Settings.create(settings, **ratio_kwargs)
    benchmark = get_benchmark(samples, settings.benchmark, settings)
    slicing = settings.slicing or benchmark.default_slicing
    if discover and not benchmark.discovery_slicings:
        raise ImageNetXError(
            f"Slice discovery in the report uses the benchmark's slicings, and "
            f"{benchmark.title} has none: leave out `discover=True` and run "
            "`discover_slices()` with the fields to intersect as its slicings")
    if settings.by is None and benchmark.group_slicing not in (None, slicing):
        settings = Settings.create(settings, by=benchmark.group_slicing)
    results = compute_ratios(samples, pred_fields, settings)
    ratios = results.to_dict()
    title = ratios["slice_title"]
    values = ratios["slices"]

    traces, layout = error_ratio_chart(ratios)
    figure1 = go.Figure(data=traces, layout=layout)
    extremes = results.extremes(TABLE4_K)
    # ImageNet-X's prevalence figures use every factor of an image
    described = ("factors" if benchmark.name == "imagenet_x"
                 and slicing in ("top_factor", "factors") else slicing)
    shares = slice_prevalence(
        samples, settings, slicing=described,
        split_path=(f"{settings.field_name}.split"
                    if benchmark.name == "imagenet_x" else None))
    prevalence = shares["prevalence"]
    cooccurrence = shares["cooccurrence"]
    figure2 = go.Figure(
        data=[go.Bar(name=split, x=values, y=prevalence[split])
              for split in prevalence],
        layout={"barmode": "group", "yaxis": {"title": "share of images",
                "tickformat": ".0%"}, "xaxis": {"tickangle": -40},
                "title": f"{title.capitalize()} prevalence in this view"
                + (" (multi-factor labels)" if described == "factors" else "")},
    )
    figure8 = go.Figure(
        data=[go.Heatmap(z=cooccurrence, x=values, y=values,
                         colorscale="Blues", zmin=0, zmax=1,
                         hovertemplate="P(%{x} | %{y}) = %{z:.2f}"
                         "<extra></extra>")],
        layout={"title": f"{title.capitalize()} co-occurrence in this view: "
                f"P(column {title} | row {title})", "height": 640,
                "xaxis": {"tickangle": -40}, "yaxis": {"autorange": "reversed"}},
    )

    stem = os.path.splitext(out)[0]
    rows = ratios_rows(ratios)
    csvs = [
        _write_csv(f"{stem}_error_ratios.csv",
                   [r for r in rows if r["group"] == "all"]),
        _write_csv(f"{stem}_group_slices.csv",
                   [r for r in rows if r["group"] != "all"]),
        _write_csv(f"{stem}_table4.csv", extremes),
        _write_csv(f"{stem}_prevalence.csv", [
            {"slice": v, **{s: prevalence[s][k] for s in prevalence}}
            for k, v in enumerate(values)]),
        _write_csv(f"{stem}_cooccurrence.csv", [
            {"slice": v, **dict(zip(values, row))}
            for v, row in zip(values, cooccurrence)]),
    ]
    by = ratios["by"] or "group"
    sections = [
        (f"Error ratio per {title} (Figure 1)", figure1.to_html(
            full_html=False, include_plotlyjs=True)),
        (f"Robust and susceptible {title}s per {by} (Table 4)",
         _html_table(extremes)),
        (f"{title.capitalize()} prevalence (Figure 2)", figure2.to_html(
            full_html=False, include_plotlyjs=False)),
    ]
    if described == "factors" or ratios["multi"]:
        sections.append((f"{title.capitalize()} co-occurrence (Figure 8)",
                         figure8.to_html(full_html=False, include_plotlyjs=False)))
    if benchmark.name == "cue_conflict":
        # after Figure 1, whose section carries plotly.js
        sections.insert(1, _shape_bias_section(samples, pred_fields, stem, csvs))
    if benchmark.name == "imagenet_e":
        sections.insert(1, _paired_section(samples, pred_fields, stem, csvs,
                                           settings.gt_field))
    if samples.has_field(ROLE_FIELD):
        for field in pred_fields if isinstance(pred_fields, (list, tuple)) else [pred_fields]:
            sections.append(_ood_section(samples, field, stem, csvs))
    if context_groups:
        from dataclasses import replace

        context = reference_cloud(samples, pred_fields, context_groups,
                                  replace(settings, by=None),
                                  results_dir=results_dir).to_dict()
        rows = context_rows(context)
        csvs.append(_write_csv(f"{stem}_context.csv", rows))
        traces, layout = context_chart(context)
        unusual = [r for r in rows if r["z"] is not None
                   and abs(r["z"]) >= context["unusual_z"]]
        sections.append((
            "Among published models: factor accuracy against overall accuracy (Figure 4)",
            go.Figure(data=traces, layout=layout).to_html(
                full_html=False, include_plotlyjs=False)
            + f"<p>z: residual from the published models' trend in units of their "
              f"spread; factors with |z| &ge; {context['unusual_z']:g}:</p>"
            + (_html_table(unusual) if unusual else "<p>none</p>")))
    if discover:
        found = [
            {"model": field, "rank": rank, **row}
            for field in ratios["models"]
            for rank, row in enumerate(discovery_rows(discover_slices(
                samples, field, settings=Settings.create(settings, by=None)
            ).to_dict()), 1)
        ]
        csvs.append(_write_csv(f"{stem}_discovered_slices.csv", found))
        sections.append((
            "Where the models fail beyond single slices (slice discovery: "
            "conjunctions ranked by a Bonferroni lower bound on the error ratio)",
            _html_table(found) if found else
            "<p>No conjunction errs significantly above average.</p>"))
    if shifts:
        sections += _robustness_sections(samples, list(ratios["models"]), parse_shifts(shifts),
                                         stem, csvs, settings.gt_field)
    page = _page(ratios, benchmark.title, sections,
                 readout_notes(samples, list(ratios["models"]), settings))
    write_file(out, page, DISK_ADVICE)
    return ReportSummary(out, csvs)


def _robustness_sections(samples, fields, shifts: dict, stem: str, csvs: list,
                         gt_field: str) -> list:
    """The fields' effective robustness (a chart per shift among the
    testbed's models, the table) and their calibration under shift
    (reliability diagrams, the table); their CSVs are added to ``csvs``."""
    import plotly.graph_objects as go

    results = [field_robustness(samples, f, shifts, gt_field).to_dict() for f in fields]
    rows = [r for res in results for r in robustness_rows(res)]
    csvs.append(_write_csv(f"{stem}_effective_robustness.csv", rows))
    charts = "".join(
        go.Figure(*effective_robustness_chart(shift_cloud(shift), results)).to_html(
            full_html=False, include_plotlyjs=False)
        for shift in results[0]["shifts"])
    robustness = ("Effective robustness on the ImageNet testbed's lines (Taori et al. 2020)",
                  charts + _html_table(rows))
    cal_rows, figures = [], ""
    for f in fields:
        cal = calibration_readout(samples, f, shifts, gt_field=gt_field)
        named = {"clean (val)": cal["clean"]["all"], **cal["shifts"]}
        for name, row in {**named, **{f"factor {k}": v for k, v in
                                      cal["clean"]["slices"].items()}}.items():
            scaled = row.get("scaled") or {}
            cal_rows.append({"model": f, "where": name, "n": row["n"], "accuracy": row["accuracy"],
                             "ece_equal_width": row["ece_equal_width"],
                             "ece_equal_mass": row["ece_equal_mass"],
                             "rms_calibration_error": row["rms_calibration_error"],
                             "temperature": cal["temperature"],
                             "scaled_ece_equal_width": scaled.get("ece_equal_width"),
                             "scaled_ece_equal_mass": scaled.get("ece_equal_mass"),
                             "scaled_rms_calibration_error": scaled.get("rms_calibration_error")})
        figures += go.Figure(*reliability_chart(named, f"{f}: reliability, clean and under "
                                                       "shift")).to_html(
            full_html=False, include_plotlyjs=False)
        if cal["note"]:
            figures += f"<p>{html.escape(cal['note'])}</p>"
    csvs.append(_write_csv(f"{stem}_calibration.csv", cal_rows))
    calibration = ("Calibration under shift (ECE equal-width / equal-mass, RMS calibration "
                   "error; after a temperature fitted on held-out clean images)",
                   figures + _html_table(cal_rows))
    return [robustness, calibration]


def _shape_bias_section(samples, pred_fields, stem: str, csvs: list) -> tuple:
    """The shape-bias plot and table of a cue-conflict dataset; its CSV is
    added to ``csvs``."""
    import plotly.graph_objects as go

    result_obj = shape_bias(samples, pred_fields)
    result = result_obj.to_dict()
    traces, layout = shape_bias_chart(result)
    path = write_file(f"{stem}_shape_bias.csv", shape_bias_csv(result), DISK_ADVICE)
    csvs.insert(0, path)
    rows = [r for r in csv.DictReader(io.StringIO(shape_bias_csv(result)))
            if r["category"] == "all"]
    content = (go.Figure(data=traces, layout=layout).to_html(
        full_html=False, include_plotlyjs=False) + _html_table(rows)
        + _published_section(result_obj))
    return "Shape bias (cue-conflict images; Geirhos et al. 2019)", content


def _paired_section(samples, pred_fields, stem: str, csvs: list, gt_field: str) -> tuple:
    """The paired drop per edited slice (chart and table) and, where the
    source images carry ImageNet-X factors, a heatmap of the drop per factor
    and slice for each field; its CSV is added to ``csvs``."""
    import plotly.graph_objects as go

    by_factor = samples.has_field("imagenetx.factors")
    result = paired_scores(samples, pred_fields, by_factor=by_factor,
                           gt_field=gt_field).to_dict()
    rows = paired_rows(result)
    csvs.insert(0, _write_csv(f"{stem}_paired.csv", rows))
    traces, layout = paired_chart(result)
    content = (go.Figure(data=traces, layout=layout).to_html(
        full_html=False, include_plotlyjs=False)
        + _html_table([r for r in rows if not r["factor"]]))
    slices = [s["slice"] for s in result["slices"]]
    for field, model in result["models"].items():
        if not model["factors"]:
            continue
        factors = list(next(iter(model["factors"].values())))
        z = [[None if model["factors"][s][f]["drop"] is None
              else model["factors"][s][f]["drop"] * 100 for s in slices] for f in factors]
        n = [[model["factors"][s][f]["n"] for s in slices] for f in factors]
        content += go.Figure(
            data=[go.Heatmap(z=z, x=slices, y=factors, customdata=n, colorscale="RdBu",
                             zmid=0, reversescale=True,
                             hovertemplate="%{y} / %{x}: drop %{z:+.1f} points, "
                                           "n = %{customdata}<extra></extra>")],
            layout={"title": f"{field}: top-1 drop per ImageNet-X factor of the source "
                             "image (points)", "height": 560,
                    "yaxis": {"autorange": "reversed"}, "xaxis": {"tickangle": -40}},
        ).to_html(full_html=False, include_plotlyjs=False)
    return ("Edits against their originals (paired: drop, flip rate, McNemar's exact "
            "test, bootstrap over groups)", content)


def _ood_section(samples, pred_field: str, stem: str, csvs: list) -> tuple:
    """The OOD-detection section of a field (its logit-only detectors,
    scores not stored); a note instead when its logits are missing. Its
    CSV is added to ``csvs``."""
    try:
        result = score_ood(samples, pred_field, store=False)
    except ImageNetXError as e:
        return (f"OOD detection: {pred_field}",
                f"<p>Not scored: {html.escape(str(e))}</p>")
    csvs.append(_write_csv(f"{stem}_ood_{pred_field}.csv", ood_rows(result.to_dict())))
    return ood_section(result)


def ood_section(result) -> tuple:
    """``(title, html)`` of an :func:`imagenetx.analysis.ood_detection.
    score_ood` result: the metrics of each detector against each role and
    OOD source, the benchmark's headline, and each detector's score
    distributions (:func:`imagenetx.present.figures.ood_score_chart`)."""
    import plotly.graph_objects as go

    data = result.to_dict()
    headline = [{"detector": name, **(det["headline"] or {}).get("values", {})}
                for name, det in data["detectors"].items()]
    figures = []
    for name in result.detectors:
        sets = result.distributions(name)
        traces, layout = ood_score_chart(sets, name, id_threshold(sets["ID"]))
        figures.append(go.Figure(data=traces, layout=layout).to_html(
            full_html=False, include_plotlyjs=False))
    title = (f"OOD detection: {result.pred_field} ({result.benchmark or 'OOD sets'}, "
             f"{result.convention} convention)")
    return title, ("<h3>Headline, as the benchmark's authors compute it</h3>"
                   + _html_table(headline)
                   + "<h3>Each detector against each role and OOD set</h3>"
                   + _html_table(ood_rows(data)) + "".join(figures))


def _published_section(result) -> str:
    """Shape bias against each generalization measure of Gavrikov & Keuper's
    70 published models, the fields as vertical lines; a note instead when
    their tables cannot be read (offline, no override folder)."""
    import plotly.graph_objects as go

    try:
        comparison = compare_with_published(result).to_dict()
    except ImageNetXError as e:
        return f"<p>Published models not shown: {html.escape(str(e))}</p>"
    figures = []
    for measure in comparison["measures"]:
        traces, layout = published_scatter(comparison, measure)
        figures.append(go.Figure(data=traces, layout=layout).to_html(
            full_html=False, include_plotlyjs=False))
    return ("<h3>Among published models (Gavrikov &amp; Keuper, CVPR 2024)</h3>"
            + "".join(figures))


def _write_csv(path: str, rows: list) -> str:
    """Writes ``rows`` as a CSV table at ``path``, whole (a full disk is
    one line naming the folder: :func:`imagenetx.disk.write_file`)."""
    text = io.StringIO(newline="")
    if rows:
        writer = csv.DictWriter(text, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return write_file(path, text.getvalue(), DISK_ADVICE)


def _html_table(rows: list) -> str:
    if not rows:
        return "<p>No group has images in this view.</p>"
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


def _page(ratios: dict, benchmark: str, sections: list, readouts: dict) -> str:
    title = ratios["slice_title"]

    def notes(field) -> str:
        lines = readouts.get(field) or []
        return ("<ul>" + "".join(f'<li class="readout">{html.escape(line)}</li>'
                                 for line in lines) + "</ul>") if lines else ""

    models = "".join(
        f"<li><b>{html.escape(field)}</b>: accuracy "
        f"{_cell(m['accuracy'])} on {m['n']:,} images, worst {html.escape(title)} "
        f"{html.escape(str(m.get('worst_reliable_slice') or m['worst_slice']))}"
        f"{notes(field)}</li>"
        for field, m in ratios["models"].items()
    )
    settings = html.escape(describe_settings(ratios))
    body = "".join(
        f"<section><h2>{html.escape(title)}</h2>{content}</section>"
        for title, content in sections
    )
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(benchmark)} report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; }}
td, th {{ border: 1px solid #ddd; padding: 3px 8px; text-align: left; }}
th {{ background: #f4f4f4; }}
</style></head><body>
<h1>{html.escape(benchmark)}: why the models fail</h1>
<p>{settings}. Error ratio = (1 - accuracy on a {html.escape(title)}) / (1 - accuracy);
above 1, a model fails more often on images of that {html.escape(title)}.</p>
<ul>{models}</ul>
{body}
</body></html>
"""
