"""Plotly figures of error ratios, as plain dicts.

The App panel hands these dicts to its plot and the HTML report to
``plotly.graph_objects.Figure``, so both draw the same chart. Input is the
dict of a :func:`imagenetx.analysis.compute_ratios` result (``.to_dict()``).
"""

import math

#: the paper's palette order is not fixed; these read well in both App themes
COLORS = ("#FF6D04", "#499CEF", "#6D04FF", "#2BA02B", "#E6194B", "#8C564B")


def slice_order(ratios: dict) -> list:
    """The slices sorted by their mean error ratio over the models, worst
    first; slices without images go last."""
    models = list(ratios["models"].values())

    def mean_ratio(value):
        values = [
            m["slices"][value]["error_ratio"]
            for m in models
            if m["slices"][value]["error_ratio"] is not None
        ]
        return sum(values) / len(values) if values else -math.inf

    return sorted(ratios["slices"], key=mean_ratio, reverse=True)


def error_ratio_chart(ratios: dict) -> tuple:
    """The ImageNet-X paper's Figure 1, for any slicing: a grouped bar chart
    of error ratio per slice and model, with interval whiskers, the 1.0
    line, and slices with too few images hatched and marked in their tick
    label.

    Each trace is named after its prediction field and each bar's ``x`` is
    the slice value, so a click tells which model and slice it was.

    Args:
        ratios: a :func:`imagenetx.analysis.compute_ratios` result, as
            ``.to_dict()``

    Returns:
        ``(traces, layout)``: a list of plotly trace dicts and a layout dict
    """
    order = [str(v) for v in slice_order(ratios)]
    few = {
        f
        for m in ratios["models"].values()
        for f, row in m["slices"].items()
        if row["few_images"]
    }
    traces = []
    for k, (field, model) in enumerate(ratios["models"].items()):
        rows = [model["slices"][f] for f in order]
        ys = [r["error_ratio"] for r in rows]
        traces.append(
            {
                "type": "bar",
                "name": field,
                "x": order,
                "y": ys,
                "marker": {
                    "color": COLORS[k % len(COLORS)],
                    "pattern": {
                        "shape": ["/" if f in few else "" for f in order]
                    },
                },
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": [_gap(r["ci_high"], y) for r, y in zip(rows, ys)],
                    "arrayminus": [
                        _gap(y, r["ci_low"]) for r, y in zip(rows, ys)
                    ],
                    "thickness": 1.2,
                    "width": 3,
                },
                "customdata": [
                    [
                        r["n"],
                        _pct(r["accuracy"]),
                        _num(r["ci_low"]),
                        _num(r["ci_high"]),
                        " (few images)" if r["few_images"] else "",
                    ]
                    for r in rows
                ],
                "hovertemplate": (
                    "<b>%{x}</b>%{customdata[4]}<br>"
                    f"{field}<br>"
                    "error ratio %{y:.3f} [%{customdata[2]}, %{customdata[3]}]"
                    "<br>accuracy %{customdata[1]}<br>n = %{customdata[0]:,}"
                    "<extra></extra>"
                ),
            }
        )
    layout = {
        "barmode": "group",
        "height": 480,
        "autosize": True,
        "bargap": 0.25,
        "hovermode": "closest",
        "title": {"text": _title(ratios), "font": {"size": 13}},
        "xaxis": {
            "type": "category",
            "tickvals": order,
            "ticktext": [f + " *" if f in few else f for f in order],
            "tickangle": -40,
        },
        "yaxis": {"title": {"text": "error ratio"}, "rangemode": "tozero"},
        "shapes": [
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": 1,
                "y1": 1,
                "line": {"dash": "dash", "width": 1.5, "color": "#888"},
            }
        ],
        "legend": {"orientation": "h", "y": 1.12},
        "margin": {"t": 70, "b": 90, "l": 55, "r": 10},
        "annotations": (
            [
                {
                    "text": f"* fewer than {ratios['min_reliable_n']} images",
                    "xref": "paper",
                    "yref": "paper",
                    "x": 1,
                    "y": -0.32,
                    "showarrow": False,
                    "font": {"size": 11},
                }
            ]
            if few
            else []
        ),
    }
    return traces, layout


def _title(ratios: dict) -> str:
    correct = ratios["correct"]
    correct = {"metaclass": "meta-class",
               "real": f"ReaL ({ratios['real_mode']})"}.get(correct, correct)
    parts = [f"by {ratios['slicing']}", f"correct = {correct}"]
    if ratios.get("within"):
        parts.append("only {} {}".format(*ratios["within"]))
    if ratios.get("interval"):
        level = ratios["interval"]["level"]
        parts.append(f"{level:.0%} bootstrap intervals")
    return f"Error ratio per {ratios['slice_title']}: " + ", ".join(parts)


def _gap(high, low):
    if high is None or low is None:
        return 0
    return max(high - low, 0)


def _pct(value):
    return "n/a" if value is None else f"{value:.1%}"


def _p(value):
    return "n/a" if value is None else f"{value:.2g}"


def _num(value):
    return "n/a" if value is None else f"{value:.3f}"


def _grid(k: int, cols: int = 4, gap: float = 0.045) -> list:
    """``(x domain, y domain)`` of ``k`` small panels, row by row."""
    rows = -(-k // cols)
    w = (1 - gap * (cols - 1)) / cols
    h = (1 - gap * 1.6 * (rows - 1)) / rows
    out = []
    for i in range(k):
        r, c = divmod(i, cols)
        x0 = c * (w + gap)
        y1 = 1 - r * (h + gap * 1.6)
        out.append(([round(x0, 6), round(min(x0 + w, 1), 6)],
                    [round(max(y1 - h, 0), 6), round(y1, 6)]))
    return out


def _panels(names: list, cols: int = 4) -> tuple:
    """Axis layout entries and one title annotation per small panel."""
    layout, notes = {}, []
    for i, (name, (dx, dy)) in enumerate(zip(names, _grid(len(names), cols))):
        s = "" if i == 0 else str(i + 1)
        layout[f"xaxis{s}"] = {"domain": dx, "anchor": f"y{s}", "tickfont": {"size": 9}}
        layout[f"yaxis{s}"] = {"domain": dy, "anchor": f"x{s}", "tickfont": {"size": 9}}
        notes.append({"text": f"<b>{name}</b>", "xref": "paper", "yref": "paper",
                      "x": (dx[0] + dx[1]) / 2, "y": dy[1], "yanchor": "bottom",
                      "showarrow": False, "font": {"size": 11}})
    return layout, notes


def context_chart(result: dict) -> tuple:
    """The ImageNet-X paper's Figure 4 with the user's models in it: per
    factor, factor accuracy against overall accuracy for the published
    models (grey, hover: name and group), the fitted trend with a band of
    one spread either side, the ``y = x`` line, and each prediction field
    as a coloured point (hover: accuracy and z).

    Args:
        result: a :func:`imagenetx.analysis.context.reference_cloud`
            result, as ``.to_dict()``

    Returns:
        ``(traces, layout)``; each user trace is named after its field and
        its ``customdata`` starts with the factor, so a click tells which
        model and factor it was
    """
    from imagenetx.metrics.trends import expit, logit

    factors = result["factors"]
    ref = result["reference"]
    xs = ref["average"]
    lo, hi = min(xs), max(xs)
    for u in result["users"].values():
        lo, hi = min(lo, u["accuracy"]), max(hi, u["accuracy"])
    grid = [lo + (hi - lo) * i / 40 for i in range(41)]
    traces = []
    layout, notes = _panels(factors)
    for k, f in enumerate(factors):
        s = "" if k == 0 else str(k + 1)
        axes = {"xaxis": f"x{s}", "yaxis": f"y{s}"}
        t = result["trends"][f]
        traces.append({
            "type": "scattergl", "mode": "markers", "name": "published models",
            "legendgroup": "ref", "showlegend": k == 0, **axes,
            "x": xs, "y": [row[k] for row in ref["accuracy"]],
            "text": [f"{m} ({g})" for m, g in zip(ref["models"], ref["groups"])],
            "marker": {"size": 4, "color": "#9aa0a6", "opacity": 0.6},
            "hovertemplate": "%{text}<br>overall %{x:.3f}<br>" + f
                             + " %{y:.3f}<extra></extra>",
        })
        if t["slope"] is not None:
            z = [t["intercept"] + t["slope"] * v for v in logit(grid)]
            for off, dash, name in ((0, "solid", "trend"), (1, "dot", "± 1 spread"),
                                    (-1, "dot", None)):
                traces.append({
                    "type": "scatter", "mode": "lines", **axes,
                    "name": name or "± 1 spread", "legendgroup": f"line{abs(off)}",
                    "showlegend": k == 0 and name is not None,
                    "x": grid, "y": expit([v + off * t["spread"] for v in z]).tolist(),
                    "line": {"color": "#444", "width": 1.2 if off == 0 else 0.8,
                             "dash": dash},
                    "hoverinfo": "skip",
                })
        traces.append({
            "type": "scatter", "mode": "lines", "name": "y = x", **axes,
            "legendgroup": "diag", "showlegend": k == 0, "x": [lo, hi], "y": [lo, hi],
            "line": {"color": "#bbb", "width": 1, "dash": "dash"}, "hoverinfo": "skip",
        })
        for j, (field, u) in enumerate(result["users"].items()):
            e = u["factors"][f]
            traces.append({
                "type": "scatter", "mode": "markers", "name": field, **axes,
                "legendgroup": field, "showlegend": k == 0,
                "x": [u["accuracy"]], "y": [e["accuracy"]],
                "customdata": [[f, _num(e["z"]), _num(e["expected"])]],
                "marker": {"size": 10, "color": COLORS[j % len(COLORS)],
                           "line": {"width": 1, "color": "white"}},
                "hovertemplate": f"<b>{field}</b><br>%{{customdata[0]}} %{{y:.3f}} "
                                 "(trend %{customdata[2]})<br>overall %{x:.3f}"
                                 "<br>z = %{customdata[1]}<extra></extra>",
            })
    correct = result["correct"] + (" (paper mode)" if result["correct"] == "real" else "")
    within = f", meta-class {result['within']}" if result["within"] else ""
    layout.update({
        "height": 900, "autosize": True, "hovermode": "closest",
        "title": {"text": f"Factor accuracy against overall accuracy: "
                          f"{len(xs)} published models ({', '.join(result['groups'])}), "
                          f"{result['which']} factor, correct = {correct}{within}",
                  "font": {"size": 13}},
        "annotations": notes, "legend": {"orientation": "h", "y": -0.05},
        "margin": {"t": 70, "b": 60, "l": 45, "r": 10},
    })
    return traces, layout


def spillover_chart(result: dict, measure: str = "prevalence_shift") -> tuple:
    """The ImageNet-X paper's Figure 6 for one sweep and measure: per
    factor, the measure of every run against augmentation strength (light
    points) and the mean per strength; panels of factors with a significant
    trend (Holm) are coloured and titled ``(+)`` (rises) / ``(−)`` (falls).

    Args:
        result: a :func:`imagenetx.analysis.spillover.spillover` result, as
            ``.to_dict()``
        measure ("prevalence_shift"): or ``"error_ratio"``

    Returns:
        ``(traces, layout)``
    """
    factors = result["factors"]
    strengths = result["strengths"]
    values = result["values"][measure]
    trends = {r["factor"]: r for r in result["trends"] if r["measure"] == measure}
    levels = sorted(set(strengths))
    names = [f + {1: " (+)", -1: " (−)", 0: ""}[trends[f]["direction"]] for f in factors]
    layout, notes = _panels(names)
    traces = []
    for k, f in enumerate(factors):
        s = "" if k == 0 else str(k + 1)
        axes = {"xaxis": f"x{s}", "yaxis": f"y{s}"}
        ys = [row[k] for row in values]
        t = trends[f]
        color = {1: "#E6194B", -1: "#2BA02B", 0: "#888"}[t["direction"]]
        traces.append({
            "type": "scattergl", "mode": "markers", "name": "runs", **axes,
            "legendgroup": "runs", "showlegend": k == 0, "x": strengths, "y": ys,
            "text": result["runs"], "marker": {"size": 3, "color": color, "opacity": 0.15},
            "hovertemplate": "%{text}<br>strength %{x:g}<br>%{y:.3f}<extra></extra>",
        })
        means = []
        for level in levels:
            vals = [y for x, y in zip(strengths, ys) if x == level and y is not None]
            means.append(sum(vals) / len(vals) if vals else None)
        traces.append({
            "type": "scatter", "mode": "lines+markers", "name": "mean per strength",
            **axes, "legendgroup": "mean", "showlegend": k == 0, "x": levels,
            "y": means, "marker": {"size": 5, "color": color},
            "line": {"color": color, "width": 1.5},
            "hovertemplate": f"{f}<br>strength %{{x:g}}<br>mean %{{y:.3f}}<br>"
                             f"{result['method']} {_num(t['statistic'])}, "
                             f"p (Holm) {_p(t['p_holm'])}<extra></extra>",
        })
    title = measure.replace("_", " ")
    layout.update({
        "height": 900, "autosize": True, "hovermode": "closest",
        "title": {"text": f"{title.capitalize()} against strength, sweep "
                          f"'{result['sweep']}' ({result['strength_title']}), "
                          f"{len(result['runs'])} runs; (+)/(−): significant "
                          f"{result['method']} trend (Holm, alpha {result['alpha']:g})",
                  "font": {"size": 13}},
        "annotations": notes, "legend": {"orientation": "h", "y": -0.05},
        "margin": {"t": 70, "b": 60, "l": 45, "r": 10},
    })
    return traces, layout
