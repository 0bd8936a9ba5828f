"""Plotly figures of error ratios and shape bias, as plain dicts.

The App panel hands these dicts to its plot and the HTML report to
``plotly.graph_objects.Figure``, so both draw the same chart. Input is the
dict of a result (``.to_dict()``): :func:`imagenetx.analysis.compute_ratios`
for :func:`error_ratio_chart`, :func:`imagenetx.analysis.shape_bias.
shape_bias` for :func:`shape_bias_chart`, :func:`imagenetx.analysis.
published.compare_with_published` for :func:`published_scatter`;
:func:`ood_score_chart` takes a detector's score arrays.
"""

import math

import numpy as np

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
    line, each bar with too few images hatched, and a slice's tick label
    marked where every field has too few images there.

    Each trace is named after its prediction field and each bar's ``x`` is
    the slice value, so a click tells which model and slice it was.

    Args:
        ratios: a :func:`imagenetx.analysis.compute_ratios` result, as
            ``.to_dict()``

    Returns:
        ``(traces, layout)``: a list of plotly trace dicts and a layout dict
    """
    order = [str(v) for v in slice_order(ratios)]
    # hatching per bar (field x slice); a tick's * only where every field
    # has few images in that slice
    few = {
        f
        for f in order
        if all(m["slices"][f]["few_images"] for m in ratios["models"].values())
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
                        "shape": ["/" if r["few_images"] else "" for r in rows]
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


def _num(value):
    return "n/a" if value is None else f"{value:.3f}"


#: the trace of the pooled human observers in :func:`shape_bias_chart`
HUMANS_TRACE = "humans (pooled)"


def shape_bias_chart(result: dict) -> tuple:
    """Geirhos et al.'s shape-bias plot: one row per shape category, the
    fraction of shape decisions (of shape + texture decisions) from 0 to 1,
    a marker per model and a red diamond for the pooled humans; each
    model's overall shape bias as a dotted vertical line in its colour.

    Each trace is named after its prediction field and each marker's ``y``
    is the category, so a click tells which model and category it was.

    Args:
        result: :meth:`imagenetx.analysis.shape_bias.ShapeBiasResults.to_dict`

    Returns:
        ``(traces, layout)``
    """
    cats = list(result["categories"])
    entries = list(result["models"].items())
    if result.get("humans"):
        entries.append((HUMANS_TRACE, result["humans"]))
    traces, shapes = [], []
    for k, (name, entry) in enumerate(entries):
        human = name == HUMANS_TRACE
        color = "#D62728" if human else COLORS[k % len(COLORS)]
        rows = [entry["categories"][c] for c in cats]
        traces.append({
            "type": "scatter",
            "mode": "markers",
            "name": name,
            "x": [r["shape_bias"] for r in rows],
            "y": cats,
            "marker": {"color": color, "size": 11 if human else 9,
                       "symbol": "diamond" if human else "circle"},
            "customdata": [[r["shape"], r["texture"], r["n"]] for r in rows],
            "hovertemplate": (f"<b>{name}</b>, %{{y}}<br>shape bias %{{x:.3f}}"
                              "<br>%{customdata[0]} shape / %{customdata[1]} texture "
                              "of %{customdata[2]} images<extra></extra>"),
        })
        if entry["shape_bias"] is not None:
            shapes.append({"type": "line", "xref": "x", "yref": "paper",
                           "x0": entry["shape_bias"], "x1": entry["shape_bias"],
                           "y0": 0, "y1": 1,
                           "line": {"color": color, "dash": "dot", "width": 1}})
    layout = {
        "title": {"text": "Shape bias per category (cue-conflict images)"},
        "xaxis": {"title": {"text": "fraction of shape decisions (shape bias)"},
                  "range": [-0.02, 1.02], "zeroline": False},
        "yaxis": {"title": {"text": "shape category"}, "categoryorder": "array",
                  "categoryarray": cats[::-1]},
        "shapes": shapes,
        "legend": {"orientation": "h", "y": -0.15},
        "margin": {"t": 40, "l": 90},
        "height": 560,
    }
    return traces, layout


#: the published models' categories, coloured as the authors' notebook
#: (matplotlib tab10 in its order, the baseline black); "other" is grey
CATEGORY_COLORS = {
    "stylized": "#1f77b4",
    "adversarial_training": "#ff7f0e",
    "training_recipes": "#2ca02c",
    "freezing": "#d62728",
    "augmentation": "#9467bd",
    "contrastive": "#8c564b",
    "baseline": "#000000",
    "other": "#a0a0a0",
}
HUMANS_COLOR = "#555555"


def published_scatter(comparison: dict, measure: str) -> tuple:
    """Shape bias (x) against one generalization measure (y) of the
    published models, one colour per training-method category, the model
    name on hover; the user's fields as dashed vertical lines at their
    shape bias (labelled with the field name; a star where a published
    model of that name gives the field a value), the pooled humans as a
    dotted one; Kendall's tau in the title.

    Args:
        comparison: a :func:`imagenetx.analysis.published.
            compare_with_published` result, as ``.to_dict()``
        measure: one of its measures

    Returns:
        ``(traces, layout)``: a list of plotly trace dicts and a layout dict
    """
    m = comparison["measures"][measure]
    models = comparison["models"]
    ys = [v for v in m["values"] if v is not None]
    lo, hi = (min(ys), max(ys)) if ys else (0, 1)
    pad = 0.04 * (hi - lo or 1)
    y_range = [lo - pad, hi + pad]
    traces = []
    categories = list(dict.fromkeys(e["category"] for e in models))
    for category in sorted(categories, key=lambda c: (c == "other", c)):
        rows = [(e, v) for e, v in zip(models, m["values"])
                if e["category"] == category and v is not None]
        traces.append({
            "type": "scatter",
            "mode": "markers",
            "name": category.replace("_", " "),
            "x": [e["shape_bias"] for e, _ in rows],
            "y": [v for _, v in rows],
            "text": [e["model"] for e, _ in rows],
            "marker": {"color": CATEGORY_COLORS.get(category, "#a0a0a0"), "size": 8,
                       "line": {"width": 0.6, "color": "#ffffff"}},
            "hovertemplate": ("<b>%{text}</b><br>" + category.replace("_", " ")
                              + "<br>shape bias %{x:.3f}<br>" + m["name"]
                              + " %{y:.2f}" + m["unit"] + "<extra></extra>"),
        })
    lines = [(f, e, COLORS[k % len(COLORS)], "dash")
             for k, (f, e) in enumerate(comparison["fields"].items())]
    if comparison.get("humans"):
        lines.append((HUMANS_TRACE, comparison["humans"], HUMANS_COLOR, "dot"))
    annotations = []
    for name, e, color, dash in lines:
        x = e["shape_bias"]
        if x is None:
            continue
        traces.append({
            "type": "scatter",
            "mode": "lines",
            "name": name,
            "x": [x, x],
            "y": y_range,
            "line": {"color": color, "width": 2.5, "dash": dash},
            "hovertemplate": (f"<b>{name}</b><br>shape bias {x:.3f}<br>rank "
                              f"{e['rank']} of {e['of']}<extra></extra>"),
        })
        value = m["fields"].get(name)
        if value is not None:
            traces.append({
                "type": "scatter", "mode": "markers", "name": name,
                "showlegend": False, "x": [x], "y": [value],
                "marker": {"color": color, "size": 15, "symbol": "star",
                           "line": {"width": 1, "color": "#ffffff"}},
                "hovertemplate": (f"<b>{name}</b> (published as "
                                  f"{e['published_model']})<br>shape bias "
                                  f"%{{x:.3f}}<br>{m['name']} %{{y:.2f}}{m['unit']}"
                                  "<extra></extra>"),
            })
        annotations.append({
            "text": name, "x": x, "xref": "x", "y": 1, "yref": "paper",
            "textangle": -90, "xanchor": "right", "yanchor": "top",
            "showarrow": False, "font": {"size": 11, "color": color},
        })
    tau = "n/a" if m["tau"] is None else f"{m['tau']:+.3f}"
    p = "n/a" if m["p_value"] is None else f"{m['p_value']:.2g}"
    layout = {
        "height": 480,
        "autosize": True,
        "hovermode": "closest",
        "title": {"text": (f"Shape bias vs {m['name']}: Kendall's \u03c4 = {tau} "
                           f"(p = {p}, {m['n']} published models)"),
                  "font": {"size": 13}},
        "xaxis": {"title": {"text": "shape bias"}, "range": [0, 1]},
        "yaxis": {"title": {"text": m["label"]}, "range": y_range},
        "legend": {"title": {"text": "training method"}},
        "margin": {"t": 60, "b": 55, "l": 60, "r": 10},
        "annotations": annotations,
    }
    return traces, layout


def _p(value):
    return "n/a" if value is None else f"{value:.2g}"


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
        its point's plotly ``ids`` (and ``customdata[0]``) is the factor, so
        a click tells which model and factor it was
    """
    from imagenetx.metrics.trends import expit, logit  # lazy: start-up

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
                "x": [u["accuracy"]], "y": [e["accuracy"]], "ids": [f],
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


#: the user's models in :func:`bias_grid`: none of the category colours
USER_COLORS = ("#E6194B", "#FFD700", "#00CED1", "#FF1493", "#7FFF00", "#4B0082")


def bias_grid(comparison: dict) -> tuple:
    """Every bias (x, one row of panels each) against every generalization
    measure (y, one column each) for the published models, coloured by
    training-method category (hover: the model), with each user model as a
    star (a dashed line at its value where it has only one of the two), and
    Kendall's tau over the published models in each panel's title (its
    p-value in the report's table).

    Args:
        comparison: :func:`imagenetx.analysis.biases.compare_biases`, as
            ``.to_dict()``

    Returns:
        ``(traces, layout)``: plotly trace dicts and a layout dict
    """
    biases, measures = list(comparison["biases"]), list(comparison["measures"])
    taus = {(p["bias"], p["measure"]): p for p in comparison["pairs"]}
    names = []
    for b in biases:
        for m in measures:
            p = taus[(b, m)]
            tau = "n/a" if p["tau"] is None else f"{p['tau']:+.2f}"
            names.append(f"{m}, tau {tau}")
    cols = len(measures)
    layout, notes = _panels(names, cols)
    models = comparison["models"]
    categories = sorted(dict.fromkeys(e["category"] for e in models),
                        key=lambda c: (c == "other", c))
    traces = []
    for k, (b, m) in enumerate((b, m) for b in biases for m in measures):
        s = "" if k == 0 else str(k + 1)
        bx, my = comparison["biases"][b], comparison["measures"][m]
        layout[f"xaxis{s}"]["title"] = {"text": b, "font": {"size": 10}}
        if k % cols == 0:
            layout[f"yaxis{s}"]["title"] = {"text": "accuracy [%]" if my["unit"] == "%"
                                            else m, "font": {"size": 10}}
        for category in categories:
            rows = [(e["model"], x, y) for e, x, y in zip(models, bx["values"], my["values"])
                    if e["category"] == category and x is not None and y is not None]
            traces.append({
                "type": "scatter", "mode": "markers", "name": category.replace("_", " "),
                "legendgroup": category, "showlegend": k == 0,
                "xaxis": f"x{s}", "yaxis": f"y{s}",
                "x": [r[1] for r in rows], "y": [r[2] for r in rows],
                "text": [r[0] for r in rows],
                "marker": {"color": CATEGORY_COLORS.get(category, "#a0a0a0"), "size": 6},
                "hovertemplate": (f"<b>%{{text}}</b><br>{b} %{{x:.3f}}<br>{m} %{{y:.2f}}"
                                  "<extra></extra>"),
            })
        for j, (label, user) in enumerate(comparison["users"].items()):
            color = USER_COLORS[j % len(USER_COLORS)]
            x, y = user[b]["value"], user[m]["value"]
            common = {"name": label, "legendgroup": f"user {label}",
                      "xaxis": f"x{s}", "yaxis": f"y{s}"}
            if x is not None and y is not None:
                traces.append({**common, "type": "scatter", "mode": "markers",
                               "showlegend": k == 0, "x": [x], "y": [y],
                               "marker": {"color": color, "size": 16, "symbol": "star",
                                          "line": {"width": 1.5, "color": "#222222"}},
                               "hovertemplate": (
                                   f"<b>{label}</b><br>{b} {x:.3f} (rank {user[b]['rank']} "
                                   f"of {user[b]['of']})<br>{m} {y:.2f} (rank "
                                   f"{user[m]['rank']} of {user[m]['of']})<extra></extra>")})
            elif x is not None or y is not None:
                ys = [v for v in my["values"] if v is not None] or [0, 1]
                xs = [v for v in bx["values"] if v is not None] or [0, 1]
                line = ({"x": [x, x], "y": [min(ys), max(ys)]} if x is not None
                        else {"x": [min(xs), max(xs)], "y": [y, y]})
                traces.append({**common, "type": "scatter", "mode": "lines",
                               "showlegend": k == 0, **line,
                               "line": {"color": color, "width": 2, "dash": "dash"},
                               "hovertemplate": f"<b>{label}</b><extra></extra>"})
    rows = len(biases)
    for note in notes:
        note["font"] = {"size": 10}
    layout.update({"height": 280 * rows + 80, "autosize": True, "annotations": notes,
                   "margin": {"l": 60, "r": 20, "t": 40, "b": 40},
                   "title": {"text": "Biases against generalization: "
                                     f"{comparison['population_title']}", "x": 0}})
    return traces, layout


def _points(value):
    return None if value is None else value * 100


def paired_chart(result: dict) -> tuple:
    """Paired drop per edited slice and model: bars of top-1 original minus
    top-1 edit over the same groups, in points, with the paired bootstrap
    interval as whiskers. Each bar's trace is the prediction field and its
    ``x`` the slice, so a click tells which pairs to show.

    Args:
        result: an :func:`imagenetx.analysis.paired.paired_scores` result,
            as ``.to_dict()``

    Returns:
        ``(traces, layout)``
    """
    order = [s["slice"] for s in result["slices"]]
    ticks = [f"{s['slice']}<br>{s['edit'] or ''} {s['edit_level'] or ''}".strip()
             for s in result["slices"]]
    traces = []
    for k, (field, model) in enumerate(result["models"].items()):
        rows = [model["slices"][s] for s in order]
        ys = [_points(r["drop"]) for r in rows]
        traces.append({
            "type": "bar",
            "name": field,
            "x": order,
            "y": ys,
            "marker": {"color": COLORS[k % len(COLORS)]},
            "error_y": {
                "type": "data",
                "symmetric": False,
                "array": [_gap(_points(r["ci_high"]), y) for r, y in zip(rows, ys)],
                "arrayminus": [_gap(y, _points(r["ci_low"])) for r, y in zip(rows, ys)],
                "thickness": 1.2,
                "width": 3,
            },
            "customdata": [[r["n"], _pct(r["top1_original"]), _pct(r["top1"]),
                            _pct(r["flip_rate"]), r["broken"], r["fixed"],
                            "n/a" if r["p"] is None else f"{r['p']:.2g}"] for r in rows],
            "hovertemplate": (
                "<b>%{x}</b><br>" f"{field}<br>"
                "drop %{y:+.1f} points (top-1 %{customdata[1]} -> %{customdata[2]})<br>"
                "flip rate %{customdata[3]}; %{customdata[4]} broken, "
                "%{customdata[5]} fixed (McNemar p %{customdata[6]})<br>"
                "n = %{customdata[0]:,} pairs<extra></extra>"),
        })
    layout = {
        "barmode": "group",
        "height": 480,
        "autosize": True,
        "bargap": 0.25,
        "hovermode": "closest",
        "title": {"text": f"Top-1 drop of each edit against the same groups' "
                          f"'{result['original']}' (points, paired 95% bootstrap "
                          "intervals)", "font": {"size": 13}},
        "xaxis": {"type": "category", "tickvals": order, "ticktext": ticks,
                  "tickangle": -40},
        "yaxis": {"title": {"text": "top-1 drop (points)"}, "zeroline": True},
        "legend": {"orientation": "h", "y": 1.12},
        "margin": {"t": 70, "b": 110, "l": 55, "r": 10},
    }
    return traces, layout


def rate_bars(order: list, rows: dict, overall: dict, hover: str, title: str,
              y_title: str) -> tuple:
    """Bars of a rate per slice and field with Wilson intervals, each
    field's overall rate as a dashed line of its colour. Each bar's trace is
    the field and its ``x`` the slice, so a click tells which images to show.

    Args:
        order: the slices, in order
        rows: ``{field: [row per slice]}``, a row's ``rate``, ``ci_low``,
            ``ci_high`` and ``customdata`` (a list; ``%{customdata[k]}`` in
            ``hover``)
        overall: ``{field: overall rate or None}``
        hover: the hover lines after the slice and field
        title, y_title: the chart's and the y axis's titles

    Returns:
        ``(traces, layout)``
    """
    traces, shapes = [], []
    for k, (field, field_rows) in enumerate(rows.items()):
        color = COLORS[k % len(COLORS)]
        ys = [r["rate"] for r in field_rows]
        traces.append({
            "type": "bar",
            "name": field,
            "x": order,
            "y": ys,
            "marker": {"color": color},
            "error_y": {
                "type": "data",
                "symmetric": False,
                "array": [_gap(r["ci_high"], y) for r, y in zip(field_rows, ys)],
                "arrayminus": [_gap(y, r["ci_low"]) for r, y in zip(field_rows, ys)],
                "thickness": 1.2,
                "width": 3,
            },
            "customdata": [r["customdata"] for r in field_rows],
            "hovertemplate": "<b>%{x}</b><br>" f"{field}<br>" + hover + "<extra></extra>",
        })
        if overall.get(field) is not None:
            shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1,
                           "y0": overall[field], "y1": overall[field],
                           "line": {"dash": "dash", "width": 1.5, "color": color}})
    layout = {
        "barmode": "group",
        "height": 480,
        "autosize": True,
        "bargap": 0.25,
        "hovermode": "closest",
        "title": {"text": title, "font": {"size": 13}},
        "xaxis": {"type": "category", "tickvals": order, "tickangle": -40},
        "yaxis": {"title": {"text": y_title}, "range": [0, 1.05], "tickformat": ".0%"},
        "shapes": shapes,
        "legend": {"orientation": "h", "y": 1.12},
        "margin": {"t": 70, "b": 90, "l": 55, "r": 10},
    }
    return traces, layout


def attack_success_chart(result: dict) -> tuple:
    """Attack success per slice and adversarial field: bars of the share of
    a slice's images right before the attack that it made wrong, with
    Wilson intervals, and each field's overall rate as a dashed line of its
    colour (:func:`rate_bars`).

    Args:
        result: an :func:`imagenetx.analysis.attacks.attack_success` result

    Returns:
        ``(traces, layout)``
    """
    order = result["values"]
    rows = {field: [{"rate": r["success_rate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                     "customdata": [r["n"], r["clean_right"], r["broken"], _pct(r["ci_low"]),
                                    _pct(r["ci_high"])]}
                    for r in (model["slices"][v] for v in order)]
            for field, model in result["models"].items()}
    return rate_bars(
        order, rows, {f: m["success_rate"] for f, m in result["models"].items()},
        "attack success %{y:.1%} [%{customdata[3]}, %{customdata[4]}]<br>"
        "%{customdata[2]:,} of %{customdata[1]:,} right images broken<br>"
        "n = %{customdata[0]:,}",
        f"Attack success per {result['slice_title']} (correct = {result['label_space']}; "
        "dashed: overall; 95% Wilson intervals)", "right images made wrong")


def ood_false_positive_chart(result: dict) -> tuple:
    """Which ID images look OOD to a detector: per ImageNet-X factor and
    field, the share of the ID images its detector flags at the threshold
    keeping 95 % of them, with Wilson intervals; dashed: the overall 5 %
    (:func:`rate_bars`).

    Args:
        result: an :func:`imagenetx.analysis.ood_detection.factor_false_positives`
            result
    """
    order = result["values"]
    rows = {}
    for field, model in result["models"].items():
        by = {r["factor"]: r for r in model["rows"]}
        rows[field] = [
            {"rate": by[v]["share"], "ci_low": by[v]["ci_low"], "ci_high": by[v]["ci_high"],
             "customdata": [by[v]["n"], by[v]["flagged"], _pct(by[v]["ci_low"]),
                            _pct(by[v]["ci_high"]), model["detector"]]}
            if v in by else {"rate": None, "ci_low": None, "ci_high": None,
                             "customdata": [0, 0, "n/a", "n/a", model["detector"]]}
            for v in order]
    return rate_bars(
        order, rows, {f: m["share"] for f, m in result["models"].items()},
        "%{customdata[4]}: %{y:.1%} flagged as OOD [%{customdata[2]}, %{customdata[3]}]<br>"
        "%{customdata[1]:,} of %{customdata[0]:,} ID images",
        "ID images flagged as OOD per factor (dashed: overall; 95% Wilson intervals)",
        "ID images flagged as OOD")


def ood_score_chart(distributions: dict, detector: str, threshold=None,
                    bins: int = 60) -> tuple:
    """A detector's score distributions: one density histogram per set (the
    ID images, then each OOD set) on the same bins, overlaid, with the
    threshold that keeps 95 % of the ID images as a dashed line. The
    histograms are binned here, so the figure's size does not grow with the
    images.

    Args:
        distributions: ``{set name: scores}``, the ID set first
            (:meth:`imagenetx.analysis.ood_detection.OODScores.distributions`)
        detector: its name, for the title
        threshold (None): the score drawn as the operating point
        bins (60): the number of bins over all scores' range

    Returns:
        ``(traces, layout)``
    """
    sets = {k: np.asarray(v, dtype=np.float64).ravel() for k, v in distributions.items()}
    pooled = np.concatenate(list(sets.values()) or [np.zeros(0)])
    lo, hi = (float(pooled.min()), float(pooled.max())) if len(pooled) else (0.0, 1.0)
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    width = float(edges[1] - edges[0])
    centers = ((edges[:-1] + edges[1:]) / 2).tolist()
    traces = []
    for k, (name, scores) in enumerate(sets.items()):
        counts = np.histogram(scores, edges)[0]
        density = counts / (max(len(scores), 1) * width)
        traces.append({
            "type": "bar",
            "name": f"{name} ({len(scores):,})",
            "x": centers,
            "y": density.tolist(),
            "width": width,
            "opacity": 0.55,
            "customdata": counts.tolist(),
            "marker": {"color": "#555555" if k == 0 else COLORS[(k - 1) % len(COLORS)]},
            "hovertemplate": f"{name}<br>score %{{x:.4g}}: %{{customdata:,}} images"
                             "<extra></extra>",
        })
    shapes = [] if threshold is None else [{
        "type": "line", "xref": "x", "yref": "paper", "x0": threshold, "x1": threshold,
        "y0": 0, "y1": 1, "line": {"dash": "dash", "width": 1.5, "color": "#222222"}}]
    layout = {
        "barmode": "overlay",
        "bargap": 0,
        "height": 380,
        "autosize": True,
        "title": {"text": f"{detector}: scores of the ID images and of each OOD set "
                          "(higher = more in-distribution"
                          + ("; dashed: keeps 95% of ID" if threshold is not None else "")
                          + ")", "font": {"size": 13}},
        "xaxis": {"title": {"text": f"{detector} score"}},
        "yaxis": {"title": {"text": "density"}},
        "legend": {"orientation": "h", "y": 1.12},
        "shapes": shapes,
        "margin": {"t": 70, "b": 50, "l": 55, "r": 10},
    }
    return traces, layout
