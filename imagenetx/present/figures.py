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
