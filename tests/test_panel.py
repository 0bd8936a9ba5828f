"""The ImageNet-X panel and the App operators, run through FiftyOne's own
operator execution (a real ExecutionContext and Executor, a real database).

The panel's App events are sent as the App sends them: the operator URI of
the panel with ``__method__``, ``panel_id``, ``panel_state`` and the event's
params; what the panel asks of the App (set the view, patch its state, show
its output) comes back as the executor's invocation requests.
"""

import contextlib
import time

import fiftyone as fo
import fiftyone.operators as foo
import fiftyone.server.view as fosv
import pytest

from conftest import make_dataset
from imagenetx.analysis import compute_ratios, mistakes_view
from imagenetx.app.install import PLUGIN_NAME, install_plugin

PANEL = f"{PLUGIN_NAME}/imagenetx_panel"


@pytest.fixture(scope="module", autouse=True)
def _plugin():
    install_plugin()



class PanelSession:
    """One open panel: its state persists across events, as in the App."""

    def __init__(self, dataset: str):
        from fiftyone.operators.store import ExecutionStore

        self.dataset = dataset
        self.state = {}
        self.view_stages = None  # the App's current view
        # a panel opened for the first time: without the toggles and controls
        # an earlier test's panel kept for this dataset
        ExecutionStore.create("imagenetx_panel", fo.load_dataset(dataset)._doc.id).delete(dataset)

    def send(self, method: str, **event) -> list:
        view = (
            fosv.get_view(self.dataset, stages=self.view_stages)
            if self.view_stages
            else None
        )
        result = foo.execute_operator(
            PANEL,
            ctx={
                "dataset": self.dataset,
                "view": view,
                "params": {
                    "panel_id": "panel-1",
                    "__method__": method,
                    "panel_state": self.state,
                    **event,
                },
            },
        )
        assert result.error is None, result.error_message or result.error
        requests = result.executor._requests
        for request in requests:  # what the App would do
            if request.operator_uri.endswith("set_view"):
                self.view_stages = request.params["view"]
                # the App loads the view, then reports it to its panels
                requests = requests + self.send("on_change_view")
        return requests

    def data(self, requests) -> dict:
        """What these requests sent to draw: ``{"chart": traces}`` when the
        chart was replaced (the traces are patched into the panel state)."""
        data = {}
        for r in requests:
            if r.operator_uri.endswith("patch_panel_state") and "chart" in r.params["state"]:
                data["chart"] = r.params["state"]["chart"]
        return data


@contextlib.contextmanager
def _counting_view_builds():
    """A list that gets an entry each time an operator event builds the
    App's view (``ctx.view``), with the panel's memory of views seen
    emptied first."""
    import sys

    from fiftyone.operators.executor import ExecutionContext

    (state,) = [m for n, m in sys.modules.items() if n.endswith("imagenet_x.panels.state")]
    state._SIGNATURES.clear()
    built, original = [], ExecutionContext.view

    def view(ctx):
        if ctx._view is None:  # not built yet for this event
            built.append(1)
        return original.fget(ctx)

    ExecutionContext.view = property(view)
    try:
        yield built
    finally:
        ExecutionContext.view = original


@pytest.mark.slow
def test_panel_shows_label_bias_and_clicks_through_to_mistakes(demo_build):
    name, _ = demo_build
    panel = PanelSession(name)

    tic = time.perf_counter()
    requests = panel.send("on_load")
    print(f"panel on_load over 48,868 samples: {time.perf_counter() - tic:.2f} s")
    assert panel.state["status"] == "ok"
    # the demo opens on ImageNet's labels scored against ReaL
    assert panel.state["controls"]["correct"] == "real"
    (trace,) = panel.data(requests)["chart"]
    assert trace["name"] == "imagenet_labels"
    expected = compute_ratios(name, ["imagenet_labels"], correct="real").to_dict()
    factors = expected["models"]["imagenet_labels"]["slices"]
    for factor, ratio in zip(trace["x"], trace["y"]):
        assert ratio == factors[factor]["error_ratio"]
    assert trace["x"][:3] == ["subcategory", "texture", "shape"]
    assert "show_panel_output" in requests[-1].operator_uri

    # click the texture bar: the App's view becomes exactly those mistakes;
    # the click draws nothing: the panel draws the drill when the App
    # reports the view loaded (PanelSession sends that report, as the App)
    with _counting_view_builds() as built:
        click = panel.send("on_click_bar", trace="imagenet_labels", x="texture")
        (first,) = [k for k, r in enumerate(click) if "show_panel_output" in r.operator_uri]
        assert any(r.operator_uri.endswith("set_view") for r in click[:first])
        shown = fosv.get_view(name, stages=panel.view_stages)
        texture = factors["texture"]
        assert len(shown) == texture["n"] - texture["correct"] == 54
        assert set(shown.distinct("imagenetx.top_factor")) == {"texture"}
        assert panel.state["drill"]["count"] == 54
        # FiftyOne 1.22 reports one change with four events: the chart stays
        # as it was, and the App's view (a dataset load) is not built again
        for _ in range(3):
            requests = panel.send("on_change_view")
            assert panel.state["drill"]["slice"] == "texture"
            assert "chart" not in panel.data(requests)
    assert len(built) == 2  # the click's base view; the first report's view

    # a second click, while drilled, counts from the original view
    panel.send("on_click_bar", trace="imagenet_labels", x="shape")
    shape = factors["shape"]
    assert len(fosv.get_view(name, stages=panel.view_stages)) == (
        shape["n"] - shape["correct"])

    # back to the full dataset
    panel.send("back")
    assert len(fosv.get_view(name, stages=panel.view_stages)) == 48868
    panel.send("on_change_view")
    assert panel.state["drill"] is None


@pytest.mark.slow
def test_panel_follows_the_view_and_the_controls(demo_build):
    name, _ = demo_build
    panel = PanelSession(name)
    panel.send("on_load")

    # the user filters the App first: the ratios are over that view
    dogs = fo.load_dataset(name).match({"imagenetx.metaclass": "dog"})
    panel.view_stages = dogs._serialize()
    requests = panel.send("on_change_view")
    (trace,) = panel.data(requests)["chart"]
    expected = compute_ratios(dogs, "imagenet_labels", correct="real").to_dict()
    first, population = panel.state["summary"].splitlines()
    assert first.count("images") == 1
    assert f"{expected['models']['imagenet_labels']['n']:,} images" in first
    # and which images the per-factor numbers count, of the view's
    evaluated = dogs.exists("ground_truth").exists("imagenet_labels")
    counted = evaluated.match({"imagenetx.prototype": False})
    assert population.startswith(
        f"- `imagenet_labels`: {len(counted):,} of {len(evaluated):,} images carry "
        "ImageNet-X factors, prototypes aside")
    row = expected["models"]["imagenet_labels"]["slices"]
    assert dict(zip(trace["x"], trace["y"])) == {
        f: row[f]["error_ratio"] for f in trace["x"]}
    # the App repeats a view change: nothing is computed again
    assert "chart" not in panel.data(panel.send("on_change_view"))

    # a control changes: multi-factor labels, paper ReaL mode
    panel.send("set_control", control="slicing", value="factors")  # its button
    requests = panel.send("set_control", control="real_mode", value="paper")
    (trace,) = panel.data(requests)["chart"]
    expected = compute_ratios(dogs, "imagenet_labels", slicing="factors",
                              correct="real", real_mode="paper").to_dict()
    row = expected["models"]["imagenet_labels"]["slices"]
    assert dict(zip(trace["x"], trace["y"])) == {
        f: row[f]["error_ratio"] for f in trace["x"]}
    # and its click-through uses the same settings
    panel.send("on_click_bar", trace="imagenet_labels", x="pose")
    assert len(fosv.get_view(name, stages=panel.view_stages)) == (
        row["pose"]["n"] - row["pose"]["correct"])

    # unticking the only prediction field asks for one
    panel.send("toggle_field", field="imagenet_labels", shown=False)
    assert panel.state["status"] == "error"
    assert "Turn on at least one" in panel.state["message"]


def test_panel_empty_states_offer_the_next_step(photos_dir):
    make_dataset("panel-empty", photos_dir)
    panel = PanelSession("panel-empty")
    requests = panel.send("on_load")
    assert panel.state["status"] == "no_annotations"
    output = str(requests[-1].params)
    assert f"{PLUGIN_NAME}/load_imagenetx" in output

    # the button's operator, then a refresh: now predictions are missing
    result = foo.execute_operator(
        f"{PLUGIN_NAME}/load_imagenetx", ctx={"dataset": "panel-empty"})
    assert result.error is None
    requests = panel.send("refresh")
    assert panel.state["status"] == "no_predictions"
    output = str(requests[-1].params)
    assert f"{PLUGIN_NAME}/run_model" in output
    assert f"{PLUGIN_NAME}/import_predictions" in output


@pytest.mark.slow
def test_show_mistakes_operator_sets_the_view(demo_build):
    name, _ = demo_build
    result = foo.execute_operator(
        f"{PLUGIN_NAME}/show_mistakes",
        ctx={"dataset": name, "params": {
            "pred_field": "imagenet_labels", "slice": "texture",
            "correct": "real", "real_mode": "paper"}},
    )
    assert result.error is None, result.error_message
    (request,) = [r for r in result.executor._requests
                  if r.operator_uri.endswith("set_view")]
    shown = fosv.get_view(name, stages=request.params["view"])
    expected = mistakes_view(name, "imagenet_labels", "texture",
                             correct="real", real_mode="paper")
    assert len(shown) == len(expected) == result.result["count"] > 0


def test_load_operator_opens_a_tagged_dataset_from_the_hub(hub_repo):
    import asyncio

    from fiftyone.operators.executor import execute_or_delegate_operator

    # it streams its progress (a generator, as the App's server runs it):
    # only the messages it yields reach the App, the open_dataset request
    # among them
    result = asyncio.run(execute_or_delegate_operator(
        f"{PLUGIN_NAME}/load_benchmark",
        {"params": {"benchmark": "imagenet_x", "source": "hub", "hub": hub_repo,
                    "name": "panel-hub", "max_samples": 5}}))
    assert result.error is None, result.error
    requests = [m.to_json()["body"] for m in result.result]
    assert [r["params"]["dataset"] for r in requests
            if r["operator_uri"].endswith("open_dataset")] == ["panel-hub"]
    assert fo.load_dataset("panel-hub").count_sample_tags() == {
        "x:background": 2, "x:color": 1}

    # a bad repo id: the library's clear message, as one notification
    refused = foo.execute_operator(
        f"{PLUGIN_NAME}/load_benchmark",
        ctx={"params": {"benchmark": "imagenet_x", "source": "hub", "hub": "no-slash"}},
    )
    notes = [r.params.get("message", "") for r in refused.executor._requests
             if r.operator_uri.endswith("notify")]
    assert any("not a Hugging Face Hub repo id" in n for n in notes), notes


def test_load_operator_delegated_loads_without_opening(
    hub_repo, monkeypatch
):
    from fiftyone.operators.delegated import DelegatedOperationService
    from fiftyone.operators.executor import Executor

    queued = foo.execute_operator(
        f"{PLUGIN_NAME}/load_benchmark",
        ctx={"params": {"benchmark": "imagenet_x", "source": "hub", "hub": hub_repo,
                        "name": "panel-hub-delegated", "max_samples": 5},
             "request_delegation": True},
    )
    assert queued.error is None, queued.error_message
    assert queued.delegated
    assert not fo.dataset_exists("panel-hub-delegated")

    # a delegated run has no App to open the dataset in: it asks for nothing
    triggered = []
    trigger = Executor.trigger

    def record(self, operator_name, params=None):
        triggered.append(operator_name)
        return trigger(self, operator_name, params)

    monkeypatch.setattr(Executor, "trigger", record)
    done = DelegatedOperationService().execute_queued_operations(
        operator=f"{PLUGIN_NAME}/load_benchmark")
    assert len(done) == 1 and done[0].error is None, done[0].error
    assert done[0].result["samples"] == 5 and \
        "3 with ImageNet-X annotations" in done[0].result["summary"]
    assert not [t for t in triggered if t.endswith("open_dataset")]
    assert fo.load_dataset("panel-hub-delegated").count_sample_tags() == {
        "x:background": 2, "x:color": 1}
