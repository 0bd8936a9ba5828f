"""The "ImageNet-X" panel: error ratios per slice (ImageNet-X factor,
ImageNet-D nuisance, any categorical field) over the current view; a click
on a bar shows that model's mistakes in that slice. On a cue-conflict
dataset it opens on the shape-bias plot instead; a click on a marker shows
that model's texture-driven decisions in that category. On ImageNet-X, the
"published models" chart is the paper's Figure 4 with the fields among the
ImageNet testbed's models; a click on a field's point shows its mistakes on
that factor. On a grouped dataset of edits (ImageNet-E, the editor's
outputs), the "edits (paired)" chart shows each edit's top-1 drop against the
same groups' originals; a click on a bar shows the pairs whose original the
model gets right and whose edit it gets wrong."""

import json

import fiftyone.operators as foo
import fiftyone.operators.types as types

from imagenetx.options import REAL_MODES

PLUGIN = "@imagenet-x/imagenet-x"
ALL = "all"
#: panel state paths of the controls: the App nests an input's value under
#: the name of the stack that holds it
SHOW = "show."
CONTROLS = "controls."
ERROR_RATIOS, SHAPE_BIAS, PUBLISHED = "error ratios", "shape bias", "published models"
PAIRED = "edits (paired)"
#: the charts a benchmark offers beside the error ratios, the first the default
CHARTS = {"cue_conflict": (SHAPE_BIAS, ERROR_RATIOS),
          "imagenet_x": (ERROR_RATIOS, PUBLISHED),
          "imagenet_e": (PAIRED, ERROR_RATIOS)}
#: how often the panel looks at the background runs and the dataset's
#: version (ms)
POLL_MS = 4000
#: controls with at most this many choices are rows of buttons, the others
#: dropdowns
MAX_BUTTONS = 6
#: the published models of the Figure 4 chart
CONTEXT_GROUPS = ("imagenet_testbed",)


class ImageNetXPanel(foo.Panel):
    """Grouped bars of error ratio per slice and prediction field, with
    intervals and the 1.0 line, computed over the current view."""

    @property
    def config(self):
        return foo.PanelConfig(
            name="imagenetx_panel",
            label="ImageNet-X",
            icon="bar_chart",
            surfaces="grid",
            help_markdown=(
                "Error ratio = (1 - accuracy on a slice) / (1 - accuracy "
                "overall): above 1, the model fails more often on images "
                "of that slice (an ImageNet-X factor, an ImageNet-D "
                "nuisance, ...). Click a bar to see those mistakes."
            ),
        )

    def on_load(self, ctx):
        _restore_choice(ctx)
        self._refresh(ctx)

    def on_change_dataset(self, ctx):
        ctx.panel.state.set({"drill": None, "options": None})
        self._refresh(ctx)

    def execute(self, ctx):
        method = ctx.params.get("__method__")
        if (method == "on_change_view" and _same_view(ctx)
                or method == "poll" and not _poll_news(ctx)):
            # nothing changed: no new render either (each render makes the
            # App save its spaces, refetch the page and report the same view
            # again, which would keep the server busy while the user clicks)
            return None
        return super().execute(ctx)

    def on_change_view(self, ctx):
        drill = ctx.panel.state.drill
        if drill:
            ctx.panel.state.drill = None
        self._refresh(ctx)

    def on_change_controls(self, ctx):
        """A dropdown's change (the controls with many choices)."""
        path = ctx.params.get("path")
        if path and "value" in ctx.params:
            ctx.panel.state.set(path, ctx.params["value"])
            _save_choice(ctx)
        self._refresh(ctx)

    def toggle_field(self, ctx):
        """A field's toggle: shows or hides its bars (the button carries the
        value it sets, so a repeated click changes nothing)."""
        field = ctx.params.get("field")
        if field:
            ctx.panel.state.set(SHOW + field, bool(ctx.params.get("shown")))
            _save_choice(ctx)
        self._refresh(ctx)

    def set_control(self, ctx):
        """A control's button: sets that control (chart, slicing, label
        space, ReaL mode) to the button's value."""
        name = ctx.params.get("control")
        if name:
            ctx.panel.state.set(CONTROLS + name, ctx.params.get("value"))
            _save_choice(ctx)
        self._refresh(ctx)

    def poll(self, ctx):
        """Every few seconds: the background runs on this dataset and their
        progress; when the dataset changed (a delegated Run model or import
        wrote a field), the App reloads and the chart includes it. Called
        only when :func:`_poll_news` finds something new."""
        from imagenetx.analysis.columns import dataset_version
        from imagenetx.plugin import background_runs

        state = ctx.panel.state
        _set_if_changed(state, "runs", background_runs(ctx.dataset.name))
        version = list(dataset_version(ctx.dataset))
        if state.get("version") in (None, version):
            _set_if_changed(state, "version", version)
            return
        ctx.dataset.reload()  # the worker's new field
        ctx.trigger("reload_dataset")
        self.refresh(ctx)

    def refresh(self, ctx):
        ctx.panel.state.options = None  # the dataset may have new fields
        self._refresh(ctx)

    def on_click_bar(self, ctx):
        from imagenetx.analysis import mistakes_view
        from imagenetx.benchmarks.cue_conflict.views import texture_decisions_view
        from imagenetx.errors import ImageNetXError

        chart = _chart(ctx)
        shape_bias = chart == SHAPE_BIAS
        field = ctx.params.get("trace")
        # Figure 4: a field's point carries its factor as its plotly id
        value = ctx.params.get({SHAPE_BIAS: "y", PUBLISHED: "id"}.get(chart, "x"))
        if chart == PAIRED:
            self._click_paired(ctx, field, value)
            return
        available = ctx.panel.state.get("available") or []
        if not field or value is None or field not in available:
            return  # the humans, a published model, a trend line
        drill = ctx.panel.state.drill
        base = _rebuild(ctx, drill["base"]) if drill else ctx.view
        try:
            if shape_bias:
                view = texture_decisions_view(base, field, value)
            else:
                view = mistakes_view(base, field, value, **_settings(ctx))
        except ImageNetXError as e:
            ctx.panel.state.set({"status": "error", "message": str(e)})
            return
        ctx.panel.state.drill = {
            "field": field,
            "slice": value,
            "title": "shape category" if shape_bias
            else ctx.panel.state.get("slice_title") or "slice",
            "what": "decides by texture" if shape_bias else "gets wrong",
            "count": len(view),
            "base": base._serialize(),
            "signature": _signature(view),
        }
        ctx.ops.set_view(view)
        self._refresh(ctx)  # the render draws what this computes (see _refresh)

    def _click_paired(self, ctx, field, slice_name):
        from imagenetx.analysis.paired import broken_pairs_view
        from imagenetx.errors import ImageNetXError

        if not field or slice_name is None or field not in (ctx.panel.state.get("available") or []):
            return
        drill = ctx.panel.state.drill
        base = _rebuild(ctx, drill["base"]) if drill else ctx.view
        try:
            view = broken_pairs_view(base, field, slice_name)
        except ImageNetXError as e:
            ctx.panel.state.set({"status": "error", "message": str(e)})
            return
        ctx.panel.state.drill = {
            "field": field, "slice": slice_name, "title": "edit",
            "what": "gets right on the original and wrong on the edit (each pair: "
                    "original, then edit)",
            "count": len(view) // 2, "unit": "groups",
            "base": base._serialize(), "signature": _signature(view),
        }
        ctx.ops.set_view(view)
        self._refresh(ctx)

    def back(self, ctx):
        drill = ctx.panel.state.drill
        ctx.panel.state.drill = None
        if drill:
            base = _rebuild(ctx, drill["base"])
            ctx.ops.set_view(base)
            self._refresh(ctx, base)

    def _refresh(self, ctx, view=None):
        """Computes the chart of the current settings over the current
        view (or ``view``) into the panel's state.

        Every event that renders comes here first: the App's copy of the
        state it sends can be older than the last patch, so what is drawn is
        computed again (memoized) rather than read from it.
        """
        from imagenetx.analysis import analysis_options
        from imagenetx.analysis.columns import dataset_version
        from imagenetx.analysis.memo import memoized
        from imagenetx.errors import ImageNetXError
        from imagenetx.plugin import background_runs
        from imagenetx.store.schema import prediction_fields

        state = ctx.panel.state
        if view is None:
            view = _rebuild(ctx, state.drill["base"]) if state.drill else ctx.view
        if view is None:
            state.set({"status": "error", "message": "Open a dataset first."})
            return
        _set_if_changed(state, "runs", background_runs(ctx.dataset.name))
        # the choices depend on the dataset's fields: recomputed when the
        # dataset changes and until it has something to score
        options = state.get("options")
        if (not options or options.get("dataset") != ctx.dataset.name
                or state.status in ("no_annotations", "no_predictions")):
            options = analysis_options(ctx.dataset)
            options["dataset"] = ctx.dataset.name
            state.set("options", options)
        _init_settings(ctx, options)
        if options["benchmark"] == "generic" and not options["has_ground_truth"]:
            state.status = "no_annotations"
            return
        fields = prediction_fields(view)
        _set_if_changed(state, "available", fields)
        if not fields:
            state.status = "no_predictions"
            return
        chosen = [f for f in fields if state.get(SHOW + f, True)]
        for f in fields:
            if state.get(SHOW + f) is None:
                state.set(SHOW + f, True)
        if not chosen:
            state.set({"status": "error", "chart": None, "layout": None,
                       "message": "Turn on at least one prediction field (the toggles above)."})
            return
        # every event that gets here redraws (the App's copy of the state can
        # lag behind the last patch, so it cannot say what is drawn); the
        # computation is memoized per view, settings, fields and dataset
        # version (both answered from indexes: a filtered view's own max
        # would scan it), as the App sends a change twice
        version = list(dataset_version(ctx.dataset))
        _set_if_changed(state, "version", version)
        key = json.dumps([ctx.dataset.name, _signature(view), _settings(ctx), _chart(ctx),
                          chosen, *version])
        try:
            traces, layout, summary, title, missing = memoized(
                key, lambda: self._compute_all(ctx, view, chosen))
        except ImageNetXError as e:
            state.set({"status": "error", "chart": None, "message": str(e), "missing": [],
                       "layout": None})
            return
        state.set({
            "chart": traces,
            "view_signature": _signature(view),
            "status": "ok",
            "layout": layout,
            "summary": summary,
            "slice_title": title,
            "missing": missing,
        })

    def _compute_all(self, ctx, view, chosen):
        """The chart of the ticked fields; a field without predictions in
        this view is left out and listed (the others are drawn).

        Returns:
            ``(traces, layout, summary, slice title, fields left out)``
        """
        from imagenetx.errors import ImageNetXError

        try:
            return (*self._compute(ctx, view, chosen), [])
        except ImageNetXError:
            missing = _without_predictions(view, chosen)
            rest = [f for f in chosen if f not in missing]
            if not missing or not rest:
                raise
            return (*self._compute(ctx, view, rest), missing)

    def _compute(self, ctx, view, chosen):
        """``(traces, layout, summary, slice title)`` of the chosen chart."""
        from imagenetx.analysis import compute_ratios
        from imagenetx.analysis.context import reference_cloud
        from imagenetx.analysis.shape_bias import shape_bias
        from imagenetx.present.figures import (
            context_chart,
            error_ratio_chart,
            shape_bias_chart,
        )

        if _chart(ctx) == PAIRED:
            from imagenetx.analysis.paired import paired_scores
            from imagenetx.present.figures import paired_chart

            result = paired_scores(view, chosen, by_factor=view.has_field(
                "imagenetx.factors")).to_dict()
            traces, layout = paired_chart(result)
            summary, title = _paired_summary(result), "edit"
        elif _chart(ctx) == SHAPE_BIAS:
            result = shape_bias(view, chosen).to_dict()
            traces, layout = shape_bias_chart(result)
            summary, title = _shape_bias_summary(result), "shape category"
        elif _chart(ctx) == PUBLISHED:
            result = reference_cloud(view, chosen, CONTEXT_GROUPS,
                                     **_settings(ctx)).to_dict()
            traces, layout = context_chart(result)
            summary, title = _context_summary(result), "factor"
        else:
            ratios = compute_ratios(view, chosen, **_settings(ctx)).to_dict()
            traces, layout = error_ratio_chart(ratios)
            summary, title = _summary(ratios), ratios["slice_title"]
        return traces, layout, summary, title

    def render(self, ctx):
        state = ctx.panel.state
        panel = types.Object()
        texts = _Texts(panel)
        status = state.status
        if status == "no_annotations":
            texts.md(
                "empty",
                "### No ImageNet-X annotations here\n"
                "Load them onto this dataset: samples are matched by their "
                "ImageNet file name (`ILSVRC2012_val_XXXXXXXX.JPEG`).",
            )
            panel.btn("load", label="Load ImageNet-X", variant="contained",
                      on_click=f"{PLUGIN}/load_imagenetx", prompt=True)
            panel.btn("refresh", label="Refresh", on_click=self.refresh)
        elif status == "no_predictions":
            texts.md(
                "empty",
                "### No predictions to score yet\n"
                "Run a model on this dataset, or import a predictions file "
                "(the original toolkit's CSV or an ImageNet-testbed pickle).",
            )
            panel.btn("run_model", label="Run a model", variant="contained",
                      on_click=f"{PLUGIN}/run_model", prompt=True)
            panel.btn("import", label="Import predictions",
                      on_click=f"{PLUGIN}/import_predictions", prompt=True)
            panel.btn("refresh", label="Refresh", on_click=self.refresh)
        else:
            self._render_controls(ctx, panel)
            if status == "error":
                texts.md("error", f"**{state.message}**")
            else:
                self._render_chart(ctx, panel, texts)
        self._render_runs(ctx, panel, texts)
        texts.send(ctx)
        return types.Property(
            panel, view=types.GridView(orientation="vertical", gap=1, px=2, py=1)
        )

    def _render_controls(self, ctx, panel):
        state = ctx.panel.state
        fields = panel.h_stack("fields", gap=1, align_y="center")
        for f in state.get("available") or []:
            # toggles rather than checkboxes: a button's click reaches the
            # panel at once (an input's change waits 250 ms in the App and
            # makes it save its spaces and refetch the page first)
            shown = bool(state.get(SHOW + f, True))
            fields.btn(f"toggle_{f}", label=f, icon="check_box" if shown
                       else "check_box_outline_blank",
                       variant="contained" if shown else "outlined",
                       on_click=self.toggle_field,
                       params={"field": f, "shown": not shown})
        options = state.get("options") or {}
        group = options.get("group_slicing")
        dropdowns = []
        if options.get("benchmark") in CHARTS:
            dropdowns.append(("chart", CHARTS[options["benchmark"]], "Chart"))
        dropdowns += [
            ("slicing", tuple(options.get("slicings") or ()), "Slice by"),
            ("correct", tuple(options.get("label_spaces") or ()), "Correct if"),
            ("real_mode", REAL_MODES, "Empty ReaL sets"),
        ]
        if group:
            values = tuple(options["slicings"].get(group) or ())
            dropdowns.append(("within", (ALL, *values),
                              options["slice_titles"][group].capitalize()))
        menus = []
        for name, values, label in dropdowns:
            if name == "real_mode" and state.get(CONTROLS + "correct") != "real":
                continue
            if name != "chart" and _chart(ctx) in (SHAPE_BIAS, PAIRED):
                continue  # these charts have their own slicing and label spaces
            if not values:
                continue
            current = state.get(CONTROLS + name) or values[0]
            if len(values) <= MAX_BUTTONS:
                # a row of buttons, for the same reason as the toggles
                row = panel.h_stack(f"choose_{name}", gap=1, align_y="center")
                row.md(f"{label}:", name="label")
                for value in values:
                    row.btn(f"{name}_{value}", label=value,
                            variant="contained" if value == current else "outlined",
                            on_click=self.set_control,
                            params={"control": name, "value": value})
                continue
            menus.append((name, values, label, current))
        modes = panel.h_stack("controls", gap=2, align_y="center")
        for name, values, label, current in menus:
            choices = types.DropdownView(label=label)
            for value in values:
                choices.add_choice(value, label=value)
            modes.enum(name, list(values), view=choices, default=current,
                       on_change=self.on_change_controls)
        modes.btn("refresh", label="Refresh", icon="refresh",
                  on_click=self.refresh)

    def _render_runs(self, ctx, panel, texts):
        """The timer that polls the background runs and the dataset, and
        the runs with their progress."""
        runs = ctx.panel.state.get("runs") or []
        panel.view("poll", types.TimerView(interval=POLL_MS, on_interval=self.poll))
        if not runs:
            return
        lines = []
        for run in runs:
            line = f"- **{run['label']}**: {run['state']}"
            if run.get("progress") is not None:
                line += f", {run['progress']:.0%}"
            if run.get("detail"):
                line += f" ({run['detail']})"
            lines.append(line)
        if any(r["state"] == "queued" for r in runs):
            lines.append("\nQueued runs start when a worker is free "
                         "(`imagenetx app` starts one; else run "
                         "`fiftyone delegated launch`).")
        texts.md("runs_note", "**Running in the background** (the chart adds the "
                 "new field when it ends):\n" + "\n".join(lines))

    def _render_chart(self, ctx, panel, texts):
        state = ctx.panel.state
        drill = state.drill
        if drill:
            # not "drill": the App writes the values of a stack's inputs
            # back into the state key of the stack's name
            row = panel.h_stack("drill_row", gap=2, align_y="center")
            texts.md(
                "drill_row.text",
                f"Showing the **{drill['count']:,}** {drill.get('unit', 'samples')} of "
                f"{drill.get('title', 'slice')} **{drill['slice']}** that "
                f"**{drill['field']}** {drill.get('what', 'gets wrong')}.",
                row,
            )
            row.btn("back", label="Back to the previous view", icon="undo",
                    on_click=self.back)
        elif _chart(ctx) == SHAPE_BIAS:
            texts.md("hint", "Click a marker to show the images of that category "
                     "that the model decided by their texture.")
        elif _chart(ctx) == PAIRED:
            texts.md("hint", "Bars: top-1 drop of each edit against the same images' "
                     "originals. Click a bar to show the pairs whose original the "
                     "model gets right and whose edit it gets wrong.")
        elif _chart(ctx) == PUBLISHED:
            texts.md("hint", "Grey: the ImageNet testbed's published models (hover: "
                     "name). Click a field's point to show its mistakes on "
                     "that factor.")
        else:
            texts.md("hint", "Click a bar to show that model's mistakes in that "
                     f"{state.get('slice_title') or 'slice'}.")
        panel.plot(
            "chart",
            layout=state.layout,
            config={"displaylogo": False, "responsive": True},
            on_click=self.on_click_bar,
        )
        # not "summary": the App writes its form's older copy of a
        # markdown property's value back into the state key of that name
        texts.md("summary_text", state.summary or "")
        missing = state.get("missing") or []
        if missing:
            texts.md("missing_note", "No predictions in this view (not drawn): "
                     + ", ".join(f"**{f}**" for f in missing))


def _same_view(ctx) -> bool:
    """Whether the App's view is the one the chart (or the click-through
    this panel set) was drawn for."""
    state = ctx.panel.state
    signature = _signature(ctx.view)
    drill = state.get("drill")
    if drill:
        return signature == drill.get("signature")
    return state.get("status") == "ok" and state.get("view_signature") == signature


class _Texts:
    """The panel's markdown, drawn from the panel data.

    The App shows a markdown property's value from its copy of the panel
    state, and writes its form's older copy back into that state, so text
    kept there (or given only as the schema's default) can go back to an
    earlier version. The App draws the panel data over its state: sent
    there with each render, the text is the one just rendered.
    """

    def __init__(self, panel):
        self.panel = panel
        self.values = {}

    def md(self, path: str, text: str, container=None) -> None:
        """Adds markdown at ``path`` (``"stack.name"`` inside a stack)."""
        (container or self.panel).md(text, name=path.rsplit(".", 1)[-1])
        self.values[path] = text

    def send(self, ctx) -> None:
        ctx.panel.data.set(self.values)


def _poll_news(ctx) -> bool:
    """Whether the background runs or the dataset changed since the panel
    last looked."""
    from imagenetx.analysis.columns import dataset_version
    from imagenetx.plugin import background_runs

    if ctx.dataset is None:
        return False
    state = ctx.panel.state
    return (state.get("runs") != background_runs(ctx.dataset.name)
            or state.get("version") != list(dataset_version(ctx.dataset)))


def _set_if_changed(state, key, value) -> None:
    """Sets a state key only when its value changes (each set is a patch
    the App applies and re-renders)."""
    if state.get(key) != value:
        state.set(key, value)


def _without_predictions(view, fields) -> list:
    """The fields that hold no prediction in the view (one aggregation)."""
    import fiftyone as fo

    counts = view.aggregate([fo.Count(f"{f}.label") for f in fields])
    return [f for f, n in zip(fields, counts) if not n]


#: the execution store that keeps the panel's choices per dataset
STORE = "imagenetx_panel"


def _save_choice(ctx) -> None:
    """Keeps the ticked fields and the controls for this dataset, so they
    survive a reload of the App."""
    if ctx.dataset is None:
        return
    state = ctx.panel.state
    ctx.store(STORE).set(ctx.dataset.name, {
        "show": state.get(SHOW[:-1]) or {},
        "controls": state.get(CONTROLS[:-1]) or {},
    })


def _restore_choice(ctx) -> None:
    """Puts back what :func:`_save_choice` kept for this dataset (the
    options are checked against the dataset by the refresh)."""
    if ctx.dataset is None:
        return
    saved = ctx.store(STORE).get(ctx.dataset.name) or {}
    for group, prefix in (("show", SHOW), ("controls", CONTROLS)):
        for name, value in (saved.get(group) or {}).items():
            if ctx.panel.state.get(prefix + name) is None:
                ctx.panel.state.set(prefix + name, value)


def _init_settings(ctx, options):
    state = ctx.panel.state
    slicing = state.get(CONTROLS + "slicing")
    if slicing not in options["slicings"]:
        state.set(CONTROLS + "slicing", options["default_slicing"])
    correct = state.get(CONTROLS + "correct")
    if correct not in options["label_spaces"]:
        state.set(CONTROLS + "correct", options["default_correct"])
    if state.get(CONTROLS + "real_mode") is None:
        state.set(CONTROLS + "real_mode", "clean")
    group = options.get("group_slicing")
    values = (options["slicings"].get(group) or []) if group else []
    if state.get(CONTROLS + "within") not in (ALL, *values):
        state.set(CONTROLS + "within", ALL)
    charts = CHARTS.get(options["benchmark"])
    if charts is None:
        _set_if_changed(state, CONTROLS + "chart", None)
    elif state.get(CONTROLS + "chart") not in charts:
        state.set(CONTROLS + "chart", charts[0])


def _chart(ctx) -> str:
    """The chart shown: one of :data:`CHARTS`, else the error ratios."""
    return ctx.panel.state.get(CONTROLS + "chart") or ERROR_RATIOS


def _settings(ctx) -> dict:
    state = ctx.panel.state
    options = state.get("options") or {}
    within = state.get(CONTROLS + "within", ALL)
    group = options.get("group_slicing")
    return {
        "slicing": state.get(CONTROLS + "slicing"),
        "correct": state.get(CONTROLS + "correct"),
        "real_mode": state.get(CONTROLS + "real_mode", "clean"),
        "within": None if within in (None, ALL) or not group else (group, within),
    }


def _summary(ratios: dict) -> str:
    lines = []
    for field, model in ratios["models"].items():
        acc = model["accuracy"]
        acc = "n/a" if acc is None else f"{acc:.1%}"
        lines.append(
            f"- **{field}**: accuracy {acc} on {model['n']:,} images; worst "
            f"{ratios['slice_title']} "
            f"{model.get('worst_reliable_slice') or model['worst_slice']}"
        )
    return "\n".join(lines)


def _shape_bias_summary(result: dict) -> str:
    lines = [f"- **{field}**: shape bias {_fmt(m['shape_bias'])} ({m['shape']:,} "
             f"shape / {m['texture']:,} texture decisions of {m['n']:,} images)"
             for field, m in result["models"].items()]
    if result.get("humans"):
        lines.append(f"- **humans** (pooled, {len(result['humans']['fields'])} "
                     f"observers): {_fmt(result['humans']['shape_bias'])}")
    return "\n".join(lines)


def _paired_summary(result: dict) -> str:
    """Per field: the worst edit, then the drop per factor of the source
    image and edit as a markdown table (when the dataset has factors)."""
    from imagenetx.present.formatting import paired_factor_table

    lines = []
    for field, model in result["models"].items():
        rows = [(s, r) for s, r in model["slices"].items() if r["drop"] is not None]
        if not rows:
            continue
        worst, r = max(rows, key=lambda sr: sr[1]["drop"])
        lines.append(f"- **{field}**: worst edit **{worst}**, top-1 {_fmt(r['top1_original'])} "
                     f"-> {_fmt(r['top1'])} on {r['n']:,} pairs, flip rate "
                     f"{_fmt(r['flip_rate'])}")
        if model["factors"]:
            lines += ["", f"Drop (points) of **{field}** per factor of the source image:",
                      "", paired_factor_table(result, field), ""]
    return "\n".join(lines)


def _context_summary(result: dict) -> str:
    lines = []
    for field, user in result["users"].items():
        weak = sorted(((f, e["z"]) for f, e in user["factors"].items()
                       if e["z"] is not None and abs(e["z"]) >= result["unusual_z"]),
                      key=lambda fz: fz[1])
        listing = ", ".join(f"{f} (z {z:+.1f})" for f, z in weak) or "none"
        lines.append(f"- **{field}**: accuracy {_fmt(user['accuracy'])}; unusual "
                     f"for its accuracy: {listing}")
    return "\n".join(lines)


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _signature(view) -> str:
    """The stages of a view, comparable across a round trip to the App."""
    if view is None:
        return ""
    return json.dumps(
        [[s["_cls"], s["kwargs"]] for s in view._serialize()],
        sort_keys=True,
        default=str,
    )


def _rebuild(ctx, stages):
    import fiftyone.server.view as fosv

    return fosv.get_view(ctx.dataset.name, stages=stages)
