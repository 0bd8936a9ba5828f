"""ImageNet-C-bar from its release layout, and the plain accuracy tables of
ImageNet-C and -C-bar (Gavrikov & Keuper's ``eval_imagenet_c.py`` and
``eval_imagenet_cbar.py``): small generated 224 x 224 JPEGs in
``<corruption>/<severity>/<wnid>`` folders, predictions written directly
(no model), every number checked against a hand count."""

import json

import fiftyone as fo
import numpy as np
import pytest
from PIL import Image

from conftest import REPO

from imagenetx.benchmarks import get_benchmark
from imagenetx.classes.imagenet import class_table
from imagenetx.cli import main
from imagenetx.store.schema import declare_classification

CLASSES = (1, 207, 954)


def _jpeg(path, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, (224, 224, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, "JPEG")


def _release(root, cells) -> dict:
    """Writes ``{(corruption, severity folder): severity}`` cells, one image
    per class each; returns ``{path: (corruption, severity, class)}``."""
    wnids = class_table().wnids
    built = {}
    for k, ((corruption, folder), severity) in enumerate(cells.items()):
        for j, index in enumerate(CLASSES):
            path = root / corruption / folder / wnids[index] / f"{k}_{j}.JPEG"
            _jpeg(path, 10 * k + j)
            built[str(path)] = (corruption.rsplit("/", 1)[-1], severity, index)
    return built


CBAR_CELLS = {("blue_noise_sample", "0.80"): 1, ("blue_noise_sample", "5.60"): 5,
              ("sparkles", "5.00"): 4, ("sparkles", "6.00"): 5,
              ("caustic_refraction", "3"): 3}


@pytest.fixture(scope="module")
def cbar(tmp_path_factory):
    root = tmp_path_factory.mktemp("cbar") / "ImageNet-C-Bar"
    built = _release(root, CBAR_CELLS)
    assert main(["load", "imagenet-cbar", "--dir", str(root), "--name", "cbar-test",
                 "--overwrite"]) == 0
    return fo.load_dataset("cbar-test"), built, root


def _predict(ds, field: str, seed: int, logits: bool = True, top5: bool = False):
    """Writes random 1000-way logits (or only their top 5 class indices,
    as ``predict`` stores them) and their argmax as ``field`` in one bulk
    call; returns ``{id: (top1 right, top5 right)}``."""
    rng = np.random.default_rng(seed)
    labels = class_table().labels
    ids, gts = ds.values("id"), ds.values("ground_truth.class_index")
    declare_classification(ds, field)
    values, truth = [], {}
    for sid, gt in zip(ids, gts):
        scores = rng.normal(size=1000)
        scores[gt] += rng.choice([0.0, 2.4, 9.0])  # some right, some top-5, some neither
        pred = int(np.argmax(scores))
        values.append(fo.Classification(
            label=labels[pred], class_index=pred, confidence=0.5,
            logits=scores if logits else None,
            top5=[int(k) for k in np.argsort(-scores)[:5]] if top5 else None))
        truth[sid] = (pred == gt, gt in np.argsort(-scores)[:5])
    ds.set_values(field, dict(zip(ids, values)), key_field="id")
    return truth


def _hand_means(ds, truth):
    cells = {}
    for sid, c, s in zip(*ds.values(["id", "corruption", "severity"])):
        cells.setdefault((c, s), []).append(truth[sid])
    top1 = {k: np.mean([t[0] for t in v]) for k, v in cells.items()}
    top5 = {k: np.mean([t[1] for t in v]) for k, v in cells.items()}
    return top1, top5


def test_cbar_release_loads_with_corruption_severity_and_class(cbar):
    ds, built, _ = cbar
    assert ds.info["imagenetx"]["benchmark"] == "imagenet_cbar"
    benchmark = get_benchmark(ds)
    assert benchmark.keeps_geometry and benchmark.default_slicing == "corruption"
    rows = zip(*ds.values(["filepath", "corruption", "severity", "ground_truth.class_index",
                           "ground_truth.label"]))
    found = {p: (c, s, i) for p, c, s, i, label in rows
             if label == class_table().labels[i]}
    assert found == built
    assert isinstance(ds.get_field("severity"), fo.IntField)


def test_cbar_accuracy_equals_a_hand_count(cbar, capsys):
    ds, _, _ = cbar
    truth = _predict(ds, "m", seed=0)
    top1, top5 = _hand_means(ds, truth)
    assert main(["corruption-accuracy", "--dataset", ds.name, "--pred-field", "m",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for (c, s), v in top1.items():
        assert out["corruptions"][c]["top1"][str(s)] == pytest.approx(v)
        assert out["corruptions"][c]["top5"][str(s)] == pytest.approx(top5[(c, s)])
        assert out["corruptions"][c]["n"][str(s)] == len(CLASSES)
    assert out["mean_top1"] == pytest.approx(np.mean(list(top1.values())))
    assert out["mean_top5"] == pytest.approx(np.mean(list(top5.values())))
    assert out["column"] == "top1_acc/imagenet-cbar"
    assert out["column_value"] == pytest.approx(100 * out["mean_top1"])
    assert list(out["corruptions"]) == ["blue_noise_sample", "caustic_refraction", "sparkles"]
    assert out["cells"] == 5 and not out["complete"]
    assert any("averages 50" in n for n in out["notes"])
    assert main(["corruption-accuracy", "--dataset", ds.name, "--pred-field", "m",
                 "--csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "field,benchmark,corruption,severity,n,top1,top5"
    assert len(lines) == 1 + 3 * 5
    assert main(["corruption-accuracy", "--dataset", ds.name, "--pred-field", "m"]) == 0
    assert "top1_acc/imagenet-cbar" in capsys.readouterr().out


def test_top5_from_the_stored_top5_else_the_logits(cbar, capsys):
    ds, _, _ = cbar
    truth = _predict(ds, "top5only", seed=2, logits=False, top5=True)
    _, top5 = _hand_means(ds, truth)
    assert main(["corruption-accuracy", "--dataset", ds.name, "--pred-field", "top5only",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mean_top5"] == pytest.approx(np.mean(list(top5.values())))

    truth = _predict(ds, "nologits", seed=1, logits=False)
    top1, _ = _hand_means(ds, truth)
    assert main(["corruption-accuracy", "--dataset", ds.name, "--pred-field", "nologits",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mean_top5"] is None
    assert out["mean_top1"] == pytest.approx(np.mean(list(top1.values())))
    assert any("neither top5 nor logits" in n for n in out["notes"])


def test_imagenet_c_mean_over_19_corruptions(tmp_path, capsys):
    cells = {("noise/gaussian_noise", str(s)): s for s in (1, 2, 3, 4, 5)}
    cells.update({("extra/speckle_noise", "2"): 2, ("extra/saturate", "5"): 5,
                  ("digital/contrast", "1"): 1})
    _release(tmp_path / "ImageNet-C", cells)
    assert main(["load", "imagenet-c", "--dir", str(tmp_path / "ImageNet-C"), "--name",
                 "c19-test", "--overwrite"]) == 0
    ds = fo.load_dataset("c19-test")
    truth = _predict(ds, "m", seed=2)
    top1, _ = _hand_means(ds, truth)
    capsys.readouterr()
    assert main(["corruption-errors", "--dataset", ds.name, "--pred-field", "m",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accuracy"]["mean_top1"] == pytest.approx(np.mean(list(top1.values())))
    assert set(out["accuracy"]["corruptions"]) == {"gaussian_noise", "contrast",
                                                   "speckle_noise", "saturate"}
    # mCE stays over the 15: the extra corruptions have no CE row
    assert set(out["corruptions"]) == {"gaussian_noise", "contrast"}
    errors = [1 - top1[("gaussian_noise", s)] for s in (1, 2, 3, 4, 5)]
    from imagenetx.metrics.corruption import ALEXNET_ERRORS
    assert out["mce"] == pytest.approx(np.mean(errors) / ALEXNET_ERRORS["gaussian_noise"])
    assert main(["corruption-errors", "--dataset", ds.name, "--pred-field", "m"]) == 0
    assert "Mean top-1 accuracy over 4 corruptions" in capsys.readouterr().out
    assert main(["corruption-accuracy", "--dataset", ds.name, "--pred-field", "m",
                 "--json"]) == 0
    acc = json.loads(capsys.readouterr().out)
    assert acc["column"] == "top1_acc/imagenet-c"
    assert acc["mean_top1"] == pytest.approx(out["accuracy"]["mean_top1"])


def test_bad_input_is_one_error_and_writes_nothing(cbar, tmp_path, capsys):
    ds, _, root = cbar
    wnid = class_table().wnids[CLASSES[0]]
    _jpeg(tmp_path / "plain" / wnid / "x.JPEG", 0)
    _jpeg(tmp_path / "stray" / "sparkles" / "1" / wnid / "x.JPEG", 0)
    _jpeg(tmp_path / "stray" / "lens_flare" / "1" / wnid / "x.JPEG", 0)
    _jpeg(tmp_path / "param" / "sparkles" / "4.00" / wnid / "x.JPEG", 0)
    _jpeg(tmp_path / "twice" / "sparkles" / "1" / wnid / "x.JPEG", 0)
    _jpeg(tmp_path / "twice" / "sparkles" / "1.00" / wnid / "x.JPEG", 0)
    cases = [
        (["load", "imagenet-cbar", "--dir", str(tmp_path / "plain")],
         "not in the ImageNet-C-bar release layout"),
        (["load", "imagenet-cbar", "--dir", str(tmp_path / "stray")],
         "not ImageNet-C-bar corruptions (lens_flare)"),
        (["load", "imagenet-cbar", "--dir", str(tmp_path / "param")],
         "1.00, 2.00, 3.00, 5.00, 6.00"),
        (["load", "imagenet-cbar", "--dir", str(tmp_path / "twice")], "two folders of severity 1"),
        (["load", "imagenet-c", "--dir", str(root)], "load it as ImageNet-C-bar instead"),
    ]
    for args, message in cases:
        assert main([*args, "--name", "cbar-bad"]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not fo.dataset_exists("cbar-bad")
    before = ds.get_field_schema()
    for args, message in (
            (["corruption-errors", "--dataset", ds.name, "--pred-field", "m"],
             "(`imagenetx corruption-accuracy`)"),
            (["corruption-accuracy", "--dataset", ds.name, "--pred-field", "nope"],
             "no prediction field 'nope'")):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert ds.get_field_schema() == before


def test_published_columns_are_the_mean_of_their_cells():
    """``top1_acc/imagenet-c`` and ``-cbar`` of Gavrikov & Keuper's table are
    the plain means of the layouts' 19 x 5 and 10 x 5 cells, for every model."""
    import csv

    from imagenetx.benchmarks.ood.layouts import LAYOUTS, SEVERITIES

    table = REPO.parent / "shared" / "data" / "gavrikov" / "benchmark.csv"
    if not table.is_file():
        pytest.skip("no shared copy of benchmark.csv")
    with open(table, newline="") as f:
        rows = list(csv.DictReader(f))
    for kind, cells in (("c", 95), ("cbar", 50)):
        layout = LAYOUTS[kind]
        columns = [f"top1_acc/{c}_{s}" for c in layout.corruptions for s in SEVERITIES]
        assert len(columns) == cells
        checked = 0
        for row in rows:
            if row[layout.column]:
                values = [float(row[c]) for c in columns]
                assert float(row[layout.column]) == pytest.approx(np.mean(values), abs=1e-6)
                checked += 1
        assert checked >= 60


def test_predict_feeds_the_224_images_as_they_are(cbar):
    """keeps_geometry: predict on a C-bar dataset gives the logits of the
    model on the decoded 224 x 224 image itself, not on a 256/224 zoom."""
    import torch
    from PIL import Image as PILImage

    from imagenetx.models.predict import predict
    from imagenetx.models.sources import ModelRequest, load_model

    ds, _, _ = cbar
    view = ds.limit(2)
    torch.manual_seed(0)
    predict(view, "timm:efficientnet_lite0", "lite0_raw", pretrained=False, logits=True,
            num_workers=0)
    torch.manual_seed(0)
    classifier = load_model("timm:efficientnet_lite0", ModelRequest(pretrained=False))
    prep = classifier.preprocessing
    x = torch.stack([torch.from_numpy(np.asarray(PILImage.open(p).convert("RGB")))
                     .permute(2, 0, 1) for p in view.values("filepath")])
    with torch.no_grad():
        want = classifier.module(prep.normalizer("cpu")(x)).numpy()
    got = np.stack(view.values("lite0_raw.logits"))
    assert np.abs(got - want).max() < 1e-3


def test_a_probe_feeds_the_224_images_as_they_are(cbar):
    """The probe run goes through the same setup as predict: on a benchmark
    whose images keep their geometry, the probe's levels see the decoded
    224 x 224 image itself, not a 256/224 zoom (the drift issue 46 found)."""
    import torch
    from PIL import Image as PILImage

    from imagenetx.probes.base import Probe
    from imagenetx.probes.run import run_probe

    class Seen(Probe):
        """Keeps the crops the run hands its one level, unchanged."""

        name = "seen"

        def __init__(self):
            self.crops = []

        def levels(self):
            return ["clean"]

        def apply(self, images, level, seeds):
            self.crops.append(images.detach().cpu().clone())
            return images

    ds, _, _ = cbar
    view = ds.limit(3)
    probe = Seen()
    summary = run_probe(view, "timm:efficientnet_lite0", "lite0_seen", probe,
                        pretrained=False, num_workers=0, decoder="pil")
    assert summary.probed == 3
    raw = torch.stack([torch.from_numpy(np.asarray(PILImage.open(p).convert("RGB")))
                       .permute(2, 0, 1) for p in view.values("filepath")])
    seen = (torch.cat(probe.crops) * 255).round().to(torch.uint8)
    assert seen.shape == raw.shape == (3, 3, 224, 224)
    assert torch.equal(seen, raw)
