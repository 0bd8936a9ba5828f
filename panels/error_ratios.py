"""The "ImageNet-X" panel: the charts of the dataset's benchmark and tasks
over the current view, a click showing the samples behind a bar or marker.

The panel knows no chart by name: :func:`imagenetx.present.charts.charts_for`
lists the ones a dataset has (error ratios per slice everywhere; the
shape-bias plot on cue-conflict datasets, the published models on
ImageNet-X, the paired edits on ImageNet-E; the attack's success per slice
once an adversarial field exists), each with its computation, figure,
summary and click-through. This module reads the App's events and draws;
:mod:`.state` keeps what the App does not keep for it.
"""

import json

import fiftyone.operators as foo
import fiftyone.operators.types as types

from imagenetx.options import REAL_MODES

from ..operators.forms import in_app
from .state import (
    ALL,
    CONTROLS,
    SHOW,
    Texts,
    chosen_chart,
    held_drill,
    hold_drill,
    init_settings,
    poll_news,
    rebuild,
    restore_choice,
    same_view,
    save_choice,
    set_if_changed,
    settings,
    signature,
    view_signature,
)

PLUGIN = "@imagenet-x/imagenet-x"
#: how often the panel looks at the background runs and the dataset's
#: version (ms)
POLL_MS = 4000
#: controls with at most this many choices are rows of buttons, the others
#: dropdowns
MAX_BUTTONS = 6


def _charts(ctx) -> list:
    """The charts the panel's dataset offers (the error ratios alone before
    a dataset is open)."""
    from imagenetx.benchmarks import get_benchmark
    from imagenetx.present.charts import ERROR_RATIOS, charts_for

    if ctx.dataset is None:
        return [ERROR_RATIOS]
    options = ctx.panel.state.get("options") or {}
    benchmark = get_benchmark(ctx.dataset, options.get("benchmark"))
    return charts_for(ctx.dataset, benchmark)


def _prune_scenarios(ctx) -> None:
    """Drops the Model Evaluation scenarios of fields deleted since."""
    from imagenetx.benchmarks.scenarios import prune_scenarios

    if ctx.dataset is not None:
        prune_scenarios(ctx.dataset)


def _chart(ctx):
    """The chart shown, a :class:`imagenetx.present.charts.Chart`."""
    charts = _charts(ctx)
    name = chosen_chart(ctx)
    return next((c for c in charts if c.name == name), charts[0])


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
        _prune_scenarios(ctx)
        restore_choice(ctx)
        self._refresh(ctx)

    def on_change_dataset(self, ctx):
        _prune_scenarios(ctx)
        ctx.panel.state.set({"drill": None, "options": None})
        self._refresh(ctx)

    def execute(self, ctx):
        method = ctx.params.get("__method__")
        if method == "on_click_bar":
            return self.on_click_bar(ctx)  # draws only what it changes now
        if method == "on_change_view":
            what, drill = held_drill(ctx)
            if what == "shown":
                return None
            if what == "show":  # the click-through's view is loaded: draw it
                # (the chart, of the view clicked, is the one drawn)
                ctx.panel.state.drill = drill
                return self._render(ctx)
        if (method == "on_change_view" and same_view(ctx)
                or method == "poll" and not poll_news(ctx)):
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
            save_choice(ctx)
        self._refresh(ctx)

    def toggle_field(self, ctx):
        """A field's toggle: shows or hides its bars (the button carries the
        value it sets, so a repeated click changes nothing)."""
        field = ctx.params.get("field")
        if field:
            ctx.panel.state.set(SHOW + field, bool(ctx.params.get("shown")))
            save_choice(ctx)
        self._refresh(ctx)

    def set_control(self, ctx):
        """A control's button: sets that control (chart, slicing, label
        space, ReaL mode) to the button's value."""
        name = ctx.params.get("control")
        if name:
            ctx.panel.state.set(CONTROLS + name, ctx.params.get("value"))
            save_choice(ctx)
        self._refresh(ctx)

    def poll(self, ctx):
        """Every few seconds: the background runs on this dataset and their
        progress; when the dataset changed (a delegated Run model or import
        wrote a field), the App reloads and the chart includes it. Called
        only when :func:`.state.poll_news` finds something new."""
        from imagenetx.analysis.columns import dataset_version
        from imagenetx.app.workers import background_runs

        state = ctx.panel.state
        set_if_changed(state, "runs", background_runs(ctx.dataset.name))
        version = list(dataset_version(ctx.dataset))
        if state.get("version") in (None, version):
            set_if_changed(state, "version", version)
            return
        ctx.dataset.reload()  # the worker's new field
        ctx.trigger("reload_dataset")
        self.refresh(ctx)

    def refresh(self, ctx):
        ctx.panel.state.options = None  # the dataset may have new fields
        self._refresh(ctx)

    def on_click_bar(self, ctx):
        """A click on a bar or marker: the App's view becomes the samples
        the chart says are behind it (the chart's ``click``); the panel
        draws them when the App reports that view (:func:`.state.hold_drill`)."""
        from imagenetx.errors import ImageNetXError

        chart = _chart(ctx)
        field = ctx.params.get("trace")
        value = ctx.params.get(chart.click_key)
        available = ctx.panel.state.get("available") or []
        if not field or value is None or field not in available:
            return  # the humans, a published model, a trend line
        drill = ctx.panel.state.drill
        base = rebuild(ctx, drill["base"]) if drill else ctx.view
        try:
            shown = chart.click(base, field, value, settings(ctx))
        except ImageNetXError as e:
            ctx.panel.state.set({"status": "error", "message": in_app(str(e), ctx)})
            return self._render(ctx)
        drill = {
            "field": field,
            "slice": value,
            "title": shown.title or ctx.panel.state.get("slice_title") or "slice",
            "what": shown.what,
            "count": shown.count,
            "unit": shown.unit,
            "base": base._serialize(),
            "signature": signature(shown.view),
        }
        if drill["signature"] == view_signature(ctx):  # the App has nothing to report
            ctx.panel.state.drill = drill
            self._refresh(ctx)  # the render draws what this computes (see _refresh)
            return self._render(ctx)
        hold_drill(ctx, drill)
        ctx.ops.set_view(shown.view)
        return None

    def _render(self, ctx):
        """Draws the panel, as ``Panel.execute`` does after an event."""
        ctx.ops.show_panel_output(self.render(ctx))

    def back(self, ctx):
        drill = ctx.panel.state.drill
        ctx.panel.state.drill = None
        if drill:
            base = rebuild(ctx, drill["base"])
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
        from imagenetx.app.workers import background_runs
        from imagenetx.store.schema import prediction_fields

        state = ctx.panel.state
        if view is None:
            view = rebuild(ctx, state.drill["base"]) if state.drill else ctx.view
        if view is None:
            state.set({"status": "error", "message": "Open a dataset first."})
            return
        set_if_changed(state, "runs", background_runs(ctx.dataset.name))
        # the choices depend on the dataset's fields: recomputed when the
        # dataset changes and until it has something to score
        options = state.get("options")
        if (not options or options.get("dataset") != ctx.dataset.name
                or state.status in ("no_annotations", "no_predictions")):
            options = analysis_options(ctx.dataset)
            options["dataset"] = ctx.dataset.name
            state.set("options", options)
            options["charts"] = [c.name for c in _charts(ctx)]
            state.set("options", options)
        init_settings(ctx, options)
        if options["benchmark"] == "generic" and not options["has_ground_truth"]:
            state.status = "no_annotations"
            return
        fields = prediction_fields(view)
        set_if_changed(state, "available", fields)
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
        set_if_changed(state, "version", version)
        key = json.dumps([ctx.dataset.name, signature(view), settings(ctx), chosen_chart(ctx),
                          chosen, *version])
        try:
            traces, layout, summary, title, missing = memoized(
                key, lambda: self._compute_all(ctx, view, chosen))
        except ImageNetXError as e:
            state.set({"status": "error", "chart": None, "message": in_app(str(e), ctx),
                       "missing": [], "layout": None})
            return
        state.set({
            "chart": traces,
            "view_signature": signature(view),
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
        return _chart(ctx).draw(view, chosen, settings(ctx))

    def render(self, ctx):
        state = ctx.panel.state
        panel = types.Object()
        texts = Texts(panel)
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
        charts = tuple(options.get("charts") or ())
        if len(charts) > 1:
            dropdowns.append(("chart", charts, "Chart"))
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
        chart = _chart(ctx)
        for name, values, label in dropdowns:
            if name == "real_mode" and state.get(CONTROLS + "correct") != "real":
                continue
            if name != "chart" and not chart.uses_settings:
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
        else:
            hint = _chart(ctx).hint
            texts.md("hint", hint.format(slice=state.get("slice_title") or "slice"))
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


def _without_predictions(view, fields) -> list:
    """The fields that hold no prediction in the view (one aggregation)."""
    import fiftyone as fo

    counts = view.aggregate([fo.Count(f"{f}.label") for f in fields])
    return [f for f, n in zip(fields, counts) if not n]
