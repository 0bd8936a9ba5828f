"""The panel's state: its controls' paths, the choices kept per dataset,
the view it drew, and the markdown it sends.

The App (FiftyOne 1.22) keeps its own copy of a panel's state and writes
older copies of form values back into it, so the helpers here set a key
only when it changes, compare views by their stages, and send every
markdown text in the panel data (:class:`Texts`).
"""

import json
import threading

ALL = "all"
#: panel state paths of the controls: the App nests an input's value under
#: the name of the stack that holds it
SHOW = "show."
CONTROLS = "controls."
#: the execution store that keeps the panel's choices per dataset
STORE = "imagenetx_panel"


class Texts:
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


def set_if_changed(state, key, value) -> None:
    """Sets a state key only when its value changes (each set is a patch
    the App applies and re-renders)."""
    if state.get(key) != value:
        state.set(key, value)


def signature(view) -> str:
    """The stages of a view, comparable across a round trip to the App."""
    if view is None:
        return ""
    return json.dumps(
        [[s["_cls"], s["kwargs"]] for s in view._serialize()],
        sort_keys=True,
        default=str,
    )


#: :func:`view_signature`'s memory: the signature of each recent request's view
_SIGNATURES: dict = {}
_SIGNATURES_KEPT = 64
#: guards the memories of this module (panel events run on several threads)
_LOCK = threading.Lock()


def view_signature(ctx) -> str:
    """``signature(ctx.view)``, remembered per request parameters.

    The App reports one view change with several events (FiftyOne 1.22
    sends four ``on_change_view`` per change), and ``ctx.view`` loads the
    dataset afresh for each (0.1-0.2 s at 50,000 samples with 10 prediction
    fields, holding the server while the App loads the view): the first of
    them computes the signature, the others find it here.
    """
    params = ctx.request_params
    if params.get("view_name"):  # a saved view can be saved again under its name
        return signature(ctx.view)
    key = json.dumps([params.get("dataset_id") or params.get("dataset_name"),
                      params.get("view"), params.get("filters"), params.get("extended"),
                      params.get("group_slice")], sort_keys=True, default=str)
    found = _SIGNATURES.get(key)
    if found is None:
        found = signature(ctx.view)
        with _LOCK:
            _SIGNATURES[key] = found
            while len(_SIGNATURES) > _SIGNATURES_KEPT:
                del _SIGNATURES[next(iter(_SIGNATURES))]
    return found


#: :func:`hold_drill`'s click-throughs: ``{panel id: {"drill", "shown"}}``
_HELD: dict = {}


def hold_drill(ctx, drill: dict) -> None:
    """Keeps a click-through until the App reports its view loaded.

    Drawn with the click, the panel's new state would have the App save
    its spaces and fetch the page again while it loads the view (about
    0.5 s later on the grid at 50,000 samples): the first
    ``on_change_view`` that reports the view draws it instead
    (:func:`held_drill`).
    """
    with _LOCK:
        _HELD[ctx.params.get("panel_id")] = {"drill": drill, "shown": False}


def held_drill(ctx):
    """What an ``on_change_view`` event does with a held click-through.

    Returns:
        ``("show", drill)`` for the first event that reports its view,
        ``("shown", None)`` for the App's further reports of it, and
        ``(None, None)`` when none is held for the view (one held for
        another view is dropped: the user moved on)
    """
    panel_id = ctx.params.get("panel_id")
    held = _HELD.get(panel_id)
    if held is None:
        return None, None
    if held["drill"]["signature"] != view_signature(ctx):
        with _LOCK:
            if _HELD.get(panel_id) is held:
                del _HELD[panel_id]
        return None, None
    with _LOCK:
        first, held["shown"] = not held["shown"], True
    return ("show", held["drill"]) if first else ("shown", None)


def rebuild(ctx, stages):
    """The view of ``stages`` on the panel's dataset."""
    import fiftyone.server.view as fosv

    return fosv.get_view(ctx.dataset.name, stages=stages)


def same_view(ctx) -> bool:
    """Whether the App's view is the one the chart (or the click-through
    the panel set) was drawn for."""
    state = ctx.panel.state
    current = view_signature(ctx)
    drill = state.get("drill")
    if drill:
        return current == drill.get("signature")
    return state.get("status") == "ok" and state.get("view_signature") == current


def poll_news(ctx) -> bool:
    """Whether the background runs or the dataset changed since the panel
    last looked."""
    from imagenetx.analysis.columns import dataset_version
    from imagenetx.app.workers import background_runs

    if ctx.dataset is None:
        return False
    state = ctx.panel.state
    return (state.get("runs") != background_runs(ctx.dataset.name)
            or state.get("version") != list(dataset_version(ctx.dataset)))


def save_choice(ctx) -> None:
    """Keeps the ticked fields and the controls for this dataset, so they
    survive a reload of the App."""
    if ctx.dataset is None:
        return
    state = ctx.panel.state
    ctx.store(STORE).set(ctx.dataset.name, {
        "show": state.get(SHOW[:-1]) or {},
        "controls": state.get(CONTROLS[:-1]) or {},
    })


def restore_choice(ctx) -> None:
    """Puts back what :func:`save_choice` kept for this dataset (the
    options are checked against the dataset by the refresh)."""
    if ctx.dataset is None:
        return
    saved = ctx.store(STORE).get(ctx.dataset.name) or {}
    for group, prefix in (("show", SHOW), ("controls", CONTROLS)):
        for name, value in (saved.get(group) or {}).items():
            if ctx.panel.state.get(prefix + name) is None:
                ctx.panel.state.set(prefix + name, value)


def init_settings(ctx, options: dict) -> None:
    """Puts each control on a value the dataset offers (its default when
    the kept one is not among them)."""
    state = ctx.panel.state
    if state.get(CONTROLS + "slicing") not in options["slicings"]:
        state.set(CONTROLS + "slicing", options["default_slicing"])
    if state.get(CONTROLS + "correct") not in options["label_spaces"]:
        state.set(CONTROLS + "correct", options["default_correct"])
    if state.get(CONTROLS + "real_mode") is None:
        state.set(CONTROLS + "real_mode", "clean")
    group = options.get("group_slicing")
    values = (options["slicings"].get(group) or []) if group else []
    if state.get(CONTROLS + "within") not in (ALL, *values):
        state.set(CONTROLS + "within", ALL)
    charts = options.get("charts") or []
    if state.get(CONTROLS + "chart") not in charts:
        set_if_changed(state, CONTROLS + "chart", charts[0] if charts else None)


def chosen_chart(ctx) -> str:
    """The name of the chart shown (the dataset's first when none is)."""
    state = ctx.panel.state
    charts = (state.get("options") or {}).get("charts") or []
    name = state.get(CONTROLS + "chart")
    return name if name in charts else (charts[0] if charts else "")


def settings(ctx) -> dict:
    """The analysis settings of the controls (slicing, label space, ReaL
    mode, group filter)."""
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
