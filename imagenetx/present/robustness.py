"""Effective robustness and calibration under shift, shown: the text of
``imagenetx robustness``, its rows as a table, and plotly figures as plain
dicts (``(traces, layout)``, as :mod:`imagenetx.present.figures`): the
testbed's models on a shift's logit axes with its line and band and the
user's model placed (:func:`effective_robustness_chart`) and a reliability
diagram (:func:`reliability_chart`). Input is the dict of a
:func:`imagenetx.analysis.effective_robustness.robustness` result and of
:func:`~imagenetx.analysis.effective_robustness.shift_cloud`.
"""

import math

from imagenetx.present.figures import COLORS

#: accuracy ticks (percent) of the logit axes
TICKS = (1, 2, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 98, 99)

#: the testbed's model types, coloured as its figures colour them
TYPE_COLORS = {"STANDARD": "#1f77b4", "ROBUST_INTV": "#2ca02c", "MORE_DATA": "#ff7f0e",
               "DEEPAUGMENT": "#9467bd"}


def _pts(value, spec: str = "+.2f") -> str:
    return "-" if value is None else format(value, spec)


def robustness_rows(result: dict) -> list:
    """One row per shift: clean and shift top-1, the line's, the effective
    robustness and its interval (percent and points)."""
    rows = []
    for shift, r in result["shifts"].items():
        lo, hi = r["interval"] or (None, None)
        zs = r.get("zero_shot") or {}
        rows.append({"model": result["model"], "shift": shift, "clean_top1": r["clean_top1"],
                     "top1": r["top1"], "line_top1": r["predicted_top1"],
                     "effective_robustness": r["effective_robustness"],
                     "ci_low": lo, "ci_high": hi, "n_clean": r["n_clean"],
                     "n_shift": r["n_shift"],
                     "zero_shot_effective_robustness": zs.get("effective_robustness")})
    return rows


def format_robustness(result: dict) -> str:
    """The readable table of ``imagenetx robustness``; with the calibration
    readout and the factor's rank correlations when the result has them."""
    where = ("the ImageNet testbed's table" if result["source"] == "testbed"
             else f"'{result['source']}' (clean) and each shift's dataset")
    lines = [f"{result['model']}: effective robustness on the testbed's lines "
             f"(Taori et al. 2020), from {where}",
             "x: class-matched clean top-1; line: the testbed line's top-1 at x; "
             "ER = top-1 - line (points), [95% band of the line]",
             "",
             f"{'shift':<32}{'x':>7}{'top-1':>8}{'line':>8}{'ER':>8}   interval"]
    for row in robustness_rows(result):
        band = ("" if row["ci_low"] is None
                else f"[{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]")
        lines.append(f"{row['shift']:<32}{row['clean_top1']:>7.2f}{row['top1']:>8.2f}"
                     f"{row['line_top1']:>8.2f}{row['effective_robustness']:>+8.2f}   {band}")
    zero = [(s, r["zero_shot"]) for s, r in result["shifts"].items() if r.get("zero_shot")]
    if zero:
        lines += ["", "zero-shot open_clip run: against open_clip's zero-shot line"]
        lines += [f"  {s:<30}line {z['predicted_top1']:.2f}, ER "
                  f"{z['effective_robustness']:+.2f}" for s, z in zero]
    if result.get("factors"):
        lines += ["", "error ratio of a factor against effective robustness over the "
                      "testbed models ImageNet-X scored (Spearman's rho, bootstrap interval)"]
        for s, f in result["factors"].items():
            users = "; ".join(f"{u}: ratio {v['error_ratio']:.2f}"
                              for u, v in f["users"].items())
            lines.append(f"  {f['factor']} / {s:<30}rho {f['rho']:+.3f} "
                         f"[{f['interval'][0]:+.3f}, {f['interval'][1]:+.3f}], "
                         f"{f['n']} models" + (f"; {users}" if users else ""))
    if result.get("calibration"):
        lines += ["", format_calibration(result["calibration"])]
    return "\n".join(lines)


def format_calibration(cal: dict) -> str:
    """The calibration readout as a table: per factor and per shift, ECE
    (equal-width, equal-mass) and RMS error, before -> after the
    temperature."""
    t = cal["temperature"]
    bins = cal["bins"]
    head = (f"Calibration of {cal['field']}: ECE with {bins['equal_width']} equal-width and "
            f"{bins['equal_mass']} equal-mass bins, RMS error over bins of "
            f"{bins['rms_bin_size']} images (Hendrycks)")
    if t is None:
        head += f"\n{cal['note']}"
    else:
        head += (f"\ntemperature {t:.4f}, fitted on {cal['holdout']['n']:,} held-out clean "
                 f"images ({cal['holdout']['fraction']:g} of val, seed {cal['holdout']['seed']}); "
                 "clean rows count the others")
    lines = [head, "", f"{'':<34}{'n':>7}{'acc':>7}{'conf':>7}{'ECE-w':>8}{'ECE-m':>8}"
                       f"{'RMS':>8}" + ("   after T: conf  ECE-w  ECE-m    RMS" if t else "")]

    def line(name, row):
        s = row.get("scaled")
        after = "" if not s else (f"   {_pts(s['confidence'], '9.3f')}{_pts(s['ece_equal_width'], '7.3f')}"
                                  f"{_pts(s['ece_equal_mass'], '7.3f')}"
                                  f"{_pts(s['rms_calibration_error'], '7.3f')}")
        return (f"{name[:33]:<34}{row['n']:>7}{_pts(row['accuracy'], '7.3f')}"
                f"{_pts(row['confidence'], '7.3f')}{_pts(row['ece_equal_width'], '8.3f')}"
                f"{_pts(row['ece_equal_mass'], '8.3f')}"
                f"{_pts(row['rms_calibration_error'], '8.3f')}{after}")

    lines.append(line("clean (val, not held out)", cal["clean"]["all"]))
    for name, row in cal["clean"]["slices"].items():
        lines.append(line(f"  {name}", row))
    for name, row in cal["shifts"].items():
        lines.append(line(name, row))
        for sev, r in (row.get("severity") or {}).items():
            lines.append(line(f"  severity {sev}", r))
    return "\n".join(lines)


def _logit(pct: float) -> float:
    p = min(max(pct / 100.0, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def logit_axis(title: str, lo: float, hi: float) -> dict:
    """A plotly axis in logit units with accuracy ticks between ``lo`` and
    ``hi`` percent."""
    ticks = [t for t in TICKS if lo <= t <= hi] or [lo, hi]
    return {"title": title, "tickvals": [_logit(t) for t in ticks],
            "ticktext": [f"{t:g}%" for t in ticks], "range": [_logit(lo), _logit(hi)],
            "zeroline": False}


def effective_robustness_chart(cloud: dict, results=()) -> tuple:
    """A shift's testbed models (grey: not in the fit; coloured by type), its
    line and 95 % band, and each result's model as a large point, on logit
    axes with accuracy ticks.

    Args:
        cloud: a :func:`~imagenetx.analysis.effective_robustness.shift_cloud`
        results: :func:`~imagenetx.analysis.effective_robustness.robustness`
            dicts (their ``shifts[cloud["shift"]]`` row is placed)

    Returns:
        ``(traces, layout)``; each model point's trace is named after the
        model and its ``customdata`` is ``[model, ER]``
    """
    lx = [_logit(v) for v in cloud["x"]]
    ly = [_logit(v) for v in cloud["y"]]
    traces = []
    kinds = sorted(set(cloud["types"]))
    for kind in kinds:
        idx = [i for i, t in enumerate(cloud["types"]) if t == kind]
        traces.append({
            # SVG, not WebGL: a few hundred points, drawn where WebGL is not (headless, RDP)
            "type": "scatter", "mode": "markers", "name": f"testbed: {kind.lower()}",
            "x": [lx[i] for i in idx], "y": [ly[i] for i in idx],
            "text": [cloud["models"][i] for i in idx],
            "customdata": [[cloud["x"][i], cloud["y"][i]] for i in idx],
            "marker": {"size": 5, "opacity": 0.7, "color": TYPE_COLORS.get(kind, "#9aa0a6"),
                       "symbol": ["circle" if cloud["in_fit"][i] else "circle-open"
                                  for i in idx]},
            "hovertemplate": "%{text}<br>clean %{customdata[0]:.2f}%<br>shift "
                             "%{customdata[1]:.2f}%<extra></extra>"})
    band = cloud["band"]
    bx = [_logit(v) for v in band["x"]]
    traces.append({"type": "scatter", "mode": "lines", "name": "95% band", "x": bx,
                   "y": [_logit(v) for v in band["upper"]], "line": {"width": 0},
                   "hoverinfo": "skip", "showlegend": False})
    traces.append({"type": "scatter", "mode": "lines", "name": "95% band", "x": bx,
                   "y": [_logit(v) for v in band["lower"]], "line": {"width": 0},
                   "fill": "tonexty", "fillcolor": "rgba(31,119,180,0.2)", "hoverinfo": "skip"})
    traces.append({"type": "scatter", "mode": "lines",
                   "name": f"linear fit ({cloud['n']} standard models)",
                   "x": [_logit(v) for v in cloud["line"]["x"]],
                   "y": [_logit(v) for v in cloud["line"]["y"]],
                   "line": {"color": "#1f77b4", "width": 2}, "hoverinfo": "skip"})
    xs, ys = list(cloud["x"]), list(cloud["y"])
    for j, res in enumerate(results):
        row = res["shifts"].get(cloud["shift"])
        if row is None:
            continue
        xs.append(row["clean_top1"])
        ys.append(row["top1"])
        traces.append({
            "type": "scatter", "mode": "markers", "name": res["model"],
            "x": [_logit(row["clean_top1"])], "y": [_logit(row["top1"])],
            "customdata": [[res["model"], row["effective_robustness"], row["clean_top1"],
                            row["top1"]]],
            "marker": {"size": 13, "symbol": "star", "color": COLORS[j % len(COLORS)],
                       "line": {"width": 1, "color": "white"}},
            "hovertemplate": "<b>%{customdata[0]}</b><br>clean %{customdata[2]:.2f}%<br>"
                             "shift %{customdata[3]:.2f}%<br>ER %{customdata[1]:+.2f} "
                             "points<extra></extra>"})
    pad = 2.0
    layout = {
        "title": {"text": f"{cloud['title']}: shift top-1 against class-matched clean "
                          "top-1 (logit axes)", "font": {"size": 13}},
        "xaxis": logit_axis(f"clean top-1 ({cloud['x_column']})", max(min(xs) - pad, 0.5),
                            min(max(xs) + pad, 99.5)),
        "yaxis": logit_axis(f"top-1 on {cloud['y_column']}", max(min(ys) - pad, 0.5),
                            min(max(ys) + pad, 99.5)),
        "hovermode": "closest", "height": 560, "legend": {"orientation": "h", "y": -0.18},
        "margin": {"t": 50, "b": 60, "l": 60, "r": 10}}
    return traces, layout


def reliability_chart(rows: dict, title: str = "Reliability") -> tuple:
    """A reliability diagram: per bin the accuracy against the mean
    confidence, the diagonal of perfect calibration; one trace per row,
    before and (dashed) after the temperature.

    Args:
        rows: ``{name: calibration row}`` whose rows carry ``reliability``
            (:func:`imagenetx.analysis.calibration.calibration_row`)
    """
    traces = [{"type": "scatter", "mode": "lines", "name": "perfect calibration",
               "x": [0, 1], "y": [0, 1], "line": {"color": "#bbb", "dash": "dash"},
               "hoverinfo": "skip"}]
    for j, (name, row) in enumerate(rows.items()):
        for which, rel, dash in (("", row.get("reliability"), "solid"),
                                 (" after T", (row.get("scaled") or {}).get("reliability"),
                                  "dot")):
            if not rel:
                continue
            keep = [i for i, c in enumerate(rel["count"]) if c]
            lows = [0.0, *rel["upper"][:-1]]
            traces.append({"type": "scatter", "mode": "lines+markers", "name": name + which,
                           # each point's bin, "low:high": what a click in the panel shows
                           "ids": [f"{lows[i]!r}:{rel['upper'][i]!r}" for i in keep],
                           "x": [rel["confidence"][i] for i in keep],
                           "y": [rel["accuracy"][i] for i in keep],
                           "customdata": [rel["count"][i] for i in keep],
                           "line": {"color": COLORS[j % len(COLORS)], "dash": dash},
                           "hovertemplate": "confidence %{x:.3f}<br>accuracy %{y:.3f}<br>"
                                            "%{customdata} images<extra></extra>"})
    layout = {"title": {"text": title, "font": {"size": 13}},
              "xaxis": {"title": "mean confidence", "range": [0, 1]},
              # a little room above 1: a bin all right is drawn, not cut by the title
              "yaxis": {"title": "accuracy", "range": [-0.02, 1.05]}, "height": 480,
              "margin": {"t": 50}, "hovermode": "closest"}
    return traces, layout
