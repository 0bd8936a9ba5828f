"""A benchmark's slicings as scenarios of FiftyOne's own Model Evaluation
panel, and the indexes on what the panels query.

The scenarios are read back by FiftyOne's own ``get_scenarios`` and computed
by the native panel's own ``load_scenario`` (run through
``execute_operator`` as the App calls it); its subsets must hold exactly
the images this project counts per factor.
"""

import types

import fiftyone as fo
import fiftyone.operators as foo
import numpy as np
import pytest

from imagenetx.analysis import compute_ratios
from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset
from imagenetx.benchmarks import error_ratio_metric
from imagenetx.benchmarks.scenarios import prune_scenarios
from imagenetx.store.classifications import write_classifications
from imagenetx.store.evaluation import evaluate_predictions
from imagenetx.store.indexes import added_indexes
from imagenetx.store.scenarios import read_scenarios, write_scenarios

NATIVE_PANEL = "@voxel51/panels/model_evaluation_panel_builtin"
N = 1500  # the first val images: every top factor has images, prototypes too


def _native_scenarios(ds) -> dict:
    """The scenarios as the native panel's own helper reads them."""
    from plugins.utils.model_evaluation import get_scenarios

    return get_scenarios(types.SimpleNamespace(dataset=ds))


def _stored_results(ds, key: str) -> dict:
    """An evaluation's results as stored in the database."""
    import json

    doc = ds._doc.evaluations[key]
    doc.results.seek(0)
    return json.loads(doc.results.read().decode())


def _by_name(ds) -> dict:
    return {s["name"]: s for s in _native_scenarios(ds).values()}


def _native_subsets(ds, scenario_id: str, eval_key: str) -> dict:
    """``{subset: (count, accuracy)}`` as the native panel computes them."""
    result = foo.execute_operator(NATIVE_PANEL, ctx={"dataset": ds.name, "params": {
        "panel_id": "native-1", "__method__": "load_scenario", "id": scenario_id,
        "panel_state": {"view": {"key": eval_key}}, "refresh_cache": True}})
    assert result.error is None, result.error_message
    (data,) = [r.params["data"] for r in result.executor._requests
               if r.operator_uri.endswith("patch_panel_data")]
    scenario = data[f"scenario_{scenario_id}_{eval_key}"]
    return {name: (d["distribution"], float(d["metrics"]["accuracy"]))
            for name, d in scenario["subsets_data"].items()}


@pytest.fixture(scope="module")
def tagged():
    """The first val images by file name (no image read), tagged, with one
    model's predictions evaluated."""
    name = "scenarios-val"
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    ids = ds.add_samples(fo.Sample(filepath=f"/data/val/ILSVRC2012_val_{i:08d}.JPEG")
                         for i in range(1, N + 1))
    tag_dataset(ds)
    truth = anno.val_labels()[:N].astype(np.int64)
    rng = np.random.default_rng(0)
    predicted = np.where(rng.random(N) < 0.3, (truth + 1) % 1000, truth)
    write_classifications(ds, "model", ids, predicted, confidence=[0.5] * N)
    assert evaluate_predictions(ds, "model").key == "eval_model"
    yield ds
    fo.delete_dataset(name)


def test_the_native_panel_computes_each_factor_over_the_images_counted_here(tagged):
    ds = tagged
    scenarios = _by_name(ds)
    assert set(scenarios) == {"ImageNet-X: top factor", "ImageNet-X: factors",
                              "ImageNet-X: metaclass"}
    assert ds.match({"imagenetx.prototype": True}).count() > 0  # left out here
    for name, slicing in [("ImageNet-X: top factor", "top_factor"),
                          ("ImageNet-X: factors", "factors")]:
        expected = compute_ratios(ds, "model", slicing=slicing).to_dict()["models"]["model"]["slices"]
        native = _native_subsets(ds, scenarios[name]["id"], "eval_model")
        assert set(native) == {f for f, row in expected.items() if row["n"]}
        for factor, (count, accuracy) in native.items():
            row = expected[factor]
            assert count == row["n"], (name, factor)
            assert accuracy == pytest.approx(row["correct"] / row["n"]), (name, factor)


def test_retagging_keeps_the_scenarios_and_a_deleted_field_drops_them(tagged):
    ds = fo.load_dataset(tagged.name).clone("scenarios-clone")
    try:
        tag_dataset(ds)
        before = _native_scenarios(ds)
        assert len(before) == 3
        # a user's own scenario, written as the panel writes one
        mine = {"id": "0123456789abcdef01234567", "name": "mine", "type": "sample_field",
                "subsets": ["x:pose"], "field": "tags"}
        write_scenarios(ds, {**read_scenarios(ds), mine["id"]: mine})

        tag_dataset(ds)  # again: the same scenarios, the same ids, nothing added
        assert _native_scenarios(ds) == {**before, mine["id"]: mine}

        indexed = added_indexes(ds)
        assert {"tags", "imagenetx.top_factor", "imagenetx.factors", "model.label",
                "eval_model"} <= set(indexed)

        ds.delete_sample_field("imagenetx")
        assert prune_scenarios(ds).removed == ["ImageNet-X: top factor", "ImageNet-X: factors",
                                               "ImageNet-X: metaclass"]
        assert _native_scenarios(ds) == {mine["id"]: mine}
        # FiftyOne drops the field's indexes with it
        assert not [i for i in added_indexes(ds) if i.startswith("imagenetx.")]
        assert not prune_scenarios(ds)  # nothing more to do
    finally:
        ds.delete()


def test_a_dataset_without_factor_tags_gets_no_scenario(photos_dir):
    from conftest import make_dataset

    ds = make_dataset("scenarios-untagged", photos_dir / "nothing")  # empty folder
    ds.add_samples([fo.Sample(filepath=str(photos_dir / "holiday.jpg"))])
    try:
        tag_dataset(ds)  # no ImageNet-X file name: nothing tagged
        assert _native_scenarios(ds) == {}
    finally:
        ds.delete()


def test_the_error_ratio_is_a_custom_metric_of_fiftyones_evaluations(tagged):
    from imagenetx.app.install import install_plugin
    from imagenetx.store.evaluation import ERROR_RATIO_METRIC
    from imagenetx.store.evaluation import ClassificationResults as KeptMetricsResults

    install_plugin()
    ds = tagged
    expected = compute_ratios(ds, "model").to_dict()["models"]["model"]["slices"]
    # FiftyOne's own evaluation, asked for the metric
    ds.evaluate_classifications("model", eval_key="native", custom_metrics=[ERROR_RATIO_METRIC])
    # this project's runs ask for it (the plugin is installed)
    assert error_ratio_metric(ds) == [ERROR_RATIO_METRIC]
    evaluate_predictions(ds, "model", custom_metrics=error_ratio_metric(ds))
    for key in ("native", "eval_model"):
        metrics = _stored_results(ds, key)["custom_metrics"]
        # loaded again, as another process (FiftyOne's App) loads them:
        # FiftyOne 1.21-1.22's own loader would drop them
        fresh = ds.load_evaluation_results(key, cache=False)
        assert isinstance(fresh, KeptMetricsResults)
        assert fresh.custom_metrics == metrics
        for factor, row in expected.items():
            if not row["n"]:
                continue
            entry = metrics[f"{ERROR_RATIO_METRIC}/{factor}"]
            assert entry["label"] == f"Error ratio: {factor}"
            assert entry["value"] == pytest.approx(row["error_ratio"])
            assert (entry["ci_low"], entry["ci_high"], entry["n"]) == (
                pytest.approx(row["ci_low"]), pytest.approx(row["ci_high"]), row["n"])
        largest = max(r["error_ratio"] for r in expected.values() if r["n"])
        assert metrics[ERROR_RATIO_METRIC]["value"] == pytest.approx(largest)
        assert fresh.metrics()["error_ratio"] == pytest.approx(largest)
        assert ds.get_evaluation_info(key).config.custom_metrics == [ERROR_RATIO_METRIC]
    ds.delete_evaluation("native")


def test_runs_on_a_dataset_no_benchmark_slices_ask_for_no_metric(caplog):
    """No factor, no metric: FiftyOne would warn that it failed."""
    from imagenetx.app.install import install_plugin

    install_plugin()
    ds = fo.Dataset()
    ds.add_samples([fo.Sample(filepath=f"/x/{i}.jpg", ground_truth=fo.Classification(label="tabby"),
                              model=fo.Classification(label="tabby" if i % 2 else "goldfish"))
                    for i in range(4)])
    try:
        assert error_ratio_metric(ds) is None
        with caplog.at_level("WARNING"):
            assert evaluate_predictions(ds, "model", custom_metrics=error_ratio_metric(ds)
                                        ).accuracy == 0.5
        assert ds.get_evaluation_info("eval_model").config.custom_metrics is None
        assert "Failed to compute metric" not in caplog.text
    finally:
        ds.delete()


def test_the_sample_panel_shows_an_images_factors_and_predictions(tagged):
    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    ds = tagged
    sample = ds.first()
    result = foo.execute_operator(f"{PLUGIN_NAME}/imagenetx_sample_panel", ctx={
        "dataset": ds.name, "current_sample": sample.id,
        "params": {"panel_id": "sample-1", "__method__": "on_load", "panel_state": {}}})
    assert result.error is None, result.error_message
    (state,) = [r.params["state"] for r in result.executor._requests
                if r.operator_uri.endswith("patch_panel_state") and "sample_card" in r.params["state"]]
    card = state["sample_card"]
    assert card["id"] == sample.id
    assert card["top_factor"] == sample.imagenetx.top_factor
    assert card["factors"] == list(sample.imagenetx.factors)
    (pred,) = card["predictions"]
    assert (pred["field"], pred["label"], pred["correct"]) == (
        "model", sample.model.label, sample.eval_model)
    assert pred["correct"] == (sample.model.label == sample.ground_truth.label)


def test_doctor_lists_the_indexes(tagged):
    from imagenetx.doctor import indexes

    (line,) = [l for l in indexes() if l.text.startswith(f"{tagged.name}:")]
    assert "imagenetx.top_factor" in line.text and "eval_model" in line.text


def test_indexes_stop_short_of_mongodbs_64_and_never_fail_a_run():
    """MongoDB keeps 64 indexes per collection: the 30th model's field gets
    none rather than a failed run."""
    from imagenetx.store.indexes import MAX_INDEXES, ensure_indexes

    ds = fo.Dataset()
    try:
        fields = [f"f{i}" for i in range(70)]
        ds.add_sample(fo.Sample(filepath="/x.jpg", **{f: i for i, f in enumerate(fields)}))
        created = ensure_indexes(ds, fields)
        assert len(ds.list_indexes()) == MAX_INDEXES < 64
        assert created == fields[:MAX_INDEXES - 4]  # after FiftyOne's own four
        assert ensure_indexes(ds, fields) == []
    finally:
        ds.delete()
