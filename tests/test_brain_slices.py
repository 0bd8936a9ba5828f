"""Error slices and FiftyOne Brain (imagenetx.analysis.brain): embeddings
read from a similarity index or a visualization's brain key as well as a
field, and the slices drawn on a Brain visualization whose points carry the
slice labels. Real FiftyOne database and Brain runs (sklearn backend)."""

import json
from collections import Counter

import fiftyone.brain as fob
import numpy as np
import pytest

from conftest import CUE_CONFLICT_IMAGES, planted_slices_dataset

from imagenetx.analysis.embedding_slices import discover_error_slices
from imagenetx.errors import ImageNetXError


@pytest.fixture
def planted():
    if len(CUE_CONFLICT_IMAGES) < 600:
        pytest.skip("needs ../shared/data/cue-conflict/images")
    ds, truth = planted_slices_dataset("brain-slices-test")
    yield ds, truth
    ds.delete()


def _members(result):
    return [sorted(ids) for ids in result.sample_ids]


def test_slices_from_a_similarity_index_are_the_fields_slices(planted):
    """An index built from an array (so its vectors live only in the index)
    and a visualization computed from the field give the field's slices."""
    ds, truth = planted
    by_field = discover_error_slices(ds, "pred", "emb", k=3)
    fob.compute_visualization(ds, embeddings="emb", method="pca", brain_key="emb_viz")
    assert _members(discover_error_slices(ds, "pred", "emb_viz", k=3)) == _members(by_field)
    x = np.stack(ds.values("emb"))
    ds.delete_sample_field("emb")  # from here on, only the index holds the vectors
    fob.compute_similarity(ds, embeddings=x, brain_key="emb_sim", backend="sklearn")
    assert not ds.load_brain_results("emb_sim").config.embeddings_field
    by_index = discover_error_slices(ds, "pred", "emb_sim", k=3, key="sim_slices")
    assert _members(by_index) == _members(by_field)
    assert by_index.found.accuracy == by_field.found.accuracy
    top = set(by_index.sample_ids[0])
    planted_ids = set(np.array(ds.values("id"))[truth])
    assert len(top & planted_ids) / len(top) >= 0.8  # the planted blob is the top slice
    assert ds.info["imagenetx"]["error_slicings"]["sim_slices"]["embeddings"] == "emb_sim"
    # a view: the index is read for its samples only
    half = ds.limit(300)
    assert discover_error_slices(half, "pred", "emb_sim", k=2).found.n == 300
    # a visualization's key is read as the field it was computed from
    with pytest.raises(ImageNetXError, match="is a visualization of the field 'emb', which"):
        discover_error_slices(ds, "pred", "emb_viz", k=3)


@pytest.mark.parametrize("case, words", [
    ("unknown", "`embeddings='nope'` is not a field of dataset 'brain-slices-test' nor one of "
                "its brain keys (emb_sim, points): compute it first"),
    ("points", "`embeddings='points'` is a brain run of dataset 'brain-slices-test' that keeps "
               "no embeddings of its samples"),
    ("no key", "`map_method` needs a `key`"),
    ("method", "`map_method='mds'` is not a visualization method: use one of pca, tsne, umap"),
    ("taken", "brain key 'emb_slices_map' of dataset 'brain-slices-test' holds another run: "
              "pass `overwrite=True`"),
], ids=["unknown", "points", "no-key", "method", "taken"])
def test_bad_brain_input_one_line_nothing_written(planted, case, words):
    ds, _ = planted
    fob.compute_similarity(ds, embeddings="emb", brain_key="emb_sim", backend="sklearn")
    fob.compute_visualization(ds, points=np.zeros((len(ds), 2)), brain_key="points")
    embeddings, options = {"unknown": "nope", "points": "points"}.get(case, "emb"), {
        "no key": {"map_method": "pca"}, "method": {"key": "emb_slices", "map_method": "mds"},
        "taken": {"key": "emb_slices", "map_method": "pca"}}.get(case, {"key": "emb_slices"})
    if case == "taken":
        fob.compute_visualization(ds, points=np.ones((len(ds), 2)), brain_key="emb_slices_map")
    runs, info = ds.list_brain_runs(), dict(ds.info)
    with pytest.raises(ImageNetXError) as e:
        discover_error_slices(ds, "pred", embeddings, k=2, **options)
    assert words in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert not ds.has_field("emb_slices") and not ds.list_saved_views()
    assert dict(ds.info) == info and ds.list_brain_runs() == runs


def test_the_map_carries_the_slice_labels(planted):
    """``map_method``: a Brain visualization of the slicing's embeddings under
    ``<key>_map``, recorded with the slicing; each point's value of the field
    ``key`` (what the Embeddings panel colours by) is its sample's slice."""
    from imagenetx.analysis.brain import map_slices

    ds, truth = planted
    result = discover_error_slices(ds, "pred", "emb", k=3, key="emb_slices", map_method="pca")
    assert result.map == "emb_slices_map" and result.to_dict()["map"] == "emb_slices_map"
    record = ds.info["imagenetx"]["error_slicings"]["emb_slices"]
    assert (record["map"], record["map_method"]) == ("emb_slices_map", "pca")
    results = ds.load_brain_results("emb_slices_map")
    assert results.config.method == "pca" and results.config.embeddings_field == "emb"
    assert results.points.shape == (len(ds), 2)
    labels = results.values("emb_slices")
    by_id = dict(zip(ds.values("id"), ds.values("emb_slices")))
    assert list(labels) == [by_id[i] for i in results.sample_ids]
    counts = Counter(labels)
    assert {v: counts[v] for v in record["values"]} == dict(zip(  # every member
        record["values"], map(len, result.sample_ids)))
    # the planted blob lies apart in the map too: its points are slice 1's
    ids = np.array(results.sample_ids)
    planted_ids = set(np.array(ds.values("id"))[truth])
    in_slice = np.array([v == "slice 1" for v in labels])
    assert np.mean([i in planted_ids for i in ids[in_slice]]) >= 0.8
    # from a similarity index, re-made in place: the recorded map is replaced
    fob.compute_similarity(ds, embeddings="emb", brain_key="emb_sim", backend="sklearn")
    again = discover_error_slices(ds, "pred", "emb_sim", k=2, key="emb_slices",
                                  overwrite=True, map_method="pca", seed=1)
    assert again.map == "emb_slices_map"
    redrawn = ds.load_brain_results("emb_slices_map")
    assert redrawn.config.similarity_index == "emb_sim" and redrawn.points.shape == (len(ds), 2)
    assert Counter(redrawn.values("emb_slices"))["slice 1"] == len(again.sample_ids[0])
    # t-SNE of a view (a few samples: it is slow) of 32-d embeddings, below
    # the 50 dimensions FiftyOne's t-SNE first reduces to
    few = map_slices(ds.take(60, seed=0), "emb_slices", method="tsne")
    assert few.config.method == "tsne" and few.points.shape == (60, 2)
    assert ds.info["imagenetx"]["error_slicings"]["emb_slices"]["map_method"] == "tsne"
    # too few for t-SNE: refused in one line, the map drawn before kept
    with pytest.raises(ImageNetXError, match="`method='tsne'` needs more than 30 samples"):
        map_slices(ds.take(20, seed=0), "emb_slices", method="tsne")
    kept = ds.load_brain_results("emb_slices_map")
    assert kept.points.shape == (60, 2) and ds.list_brain_runs() == ["emb_sim", "emb_slices_map"]
    # the library door: a slicing that is not stored is refused in one line
    with pytest.raises(ImageNetXError, match="`key='nope'` holds no error slices"):
        map_slices(ds, "nope")
    # slices of a view are drawn over that view's samples only
    half = ds.take(300, seed=2)
    discover_error_slices(half, "pred", "emb", k=2, key="half_slices", map_method="pca")
    drawn = ds.load_brain_results("half_slices_map")
    assert sorted(drawn.sample_ids) == sorted(half.values("id"))


def test_command_line_draws_the_map(planted, capsys):
    from imagenetx.cli import main

    ds, _ = planted
    assert main(["discover", "--dataset", ds.name, "--pred-field", "pred", "--embeddings",
                 "emb", "--top", "2", "--key", "cli_slices", "--map", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["map"] == "cli_slices_map" and ds.has_brain_run("cli_slices_map")
    assert main(["discover", "--dataset", ds.name, "--pred-field", "pred", "--embeddings",
                 "emb", "--key", "cli_slices", "--overwrite", "--map", "pca"]) == 0
    assert "drawn as brain key 'cli_slices_map'" in capsys.readouterr().out
    assert ds.get_brain_info("cli_slices_map").config.method == "pca"
    assert main(["discover", "--dataset", ds.name, "--pred-field", "pred", "--embeddings",
                 "emb", "--map"]) == 2
    assert "--map needs a --key: the map is coloured by" in capsys.readouterr().err


def test_app_operator_reads_an_index_and_draws_the_map(planted):
    """The App's "Discover slices in embeddings" form offers similarity
    indexes beside vector fields, and draws the map when asked."""
    import fiftyone.operators as foo

    from imagenetx.app.install import install_plugin

    ds, _ = planted
    fob.compute_similarity(ds, embeddings="emb", brain_key="emb_sim", backend="sklearn")
    install_plugin()
    result = foo.execute_operator("@imagenet-x/imagenet-x/discover_embedding_slices", ctx={
        "dataset": ds.name, "params": {"pred_field": "pred", "embeddings": "emb_sim", "k": 2,
                                       "key": "op_slices", "map": True}})
    assert result.error is None, result.error
    assert "drawn as brain key 'op_slices_map'" in result.result["summary"]
    assert ds.info["imagenetx"]["error_slicings"]["op_slices"]["embeddings"] == "emb_sim"
    assert ds.load_brain_results("op_slices_map").values("op_slices").count("slice 1") == \
        ds.count_values("op_slices")["slice 1"]
