"""The panel's calibration chart: each field's reliability diagram over the
view, equal to the bins written out here, and a click on a point shows the
images of that confidence bin the field gets wrong."""

import fiftyone as fo
import numpy as np
import pytest

from imagenetx.benchmarks import get_benchmark
from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset
from imagenetx.present.charts import CHARTS, charts_for
from imagenetx.store.classifications import write_classifications

N = 400
BINS = 15
#: every image counts (ImageNet-X leaves its prototype images out by default)
ALL = {"include_prototypes": True}


@pytest.fixture(scope="module")
def calibrated():
    """N tagged val file names; ``p`` right on a seeded ~70 % of them, with
    confidences drawn so that it is overconfident."""
    name = "calibration-chart"
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    ds.add_samples(fo.Sample(filepath=f"/data/val/ILSVRC2012_val_{i:08d}.JPEG")
                   for i in range(1, N + 1))
    tag_dataset(ds)
    truth = np.array(anno.val_labels()[:N])
    rng = np.random.default_rng(7)
    right = rng.random(N) < 0.7
    predicted = np.where(right, truth, (truth + 1) % 1000)
    confidence = np.clip(rng.beta(8, 2, N), 0.01, 1.0)
    write_classifications(ds, "p", ds.values("id"), predicted.tolist(),
                          confidence=confidence.tolist())
    # ImageNet-X counts its annotated images (a few val images have no annotation)
    annotated = np.array([f is not None for f in ds.values("imagenetx.top_factor")])
    assert 0 < (~annotated).sum() < N // 10
    yield ds, right & annotated, np.where(annotated, confidence, -1.0)
    ds.delete()


def _bins_written_out(right, conf):
    """Guo et al.'s equal-width bins: (lo, hi], 0 in the first."""
    edges = np.linspace(0, 1, BINS + 1)
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (conf > lo) & (conf <= hi) if lo > 0 else (conf >= 0) & (conf <= hi)  # -1: not counted
        if m.any():
            out.append((lo, hi, conf[m].mean(), right[m].mean(), int(m.sum())))
    return out


def test_the_chart_is_offered_and_draws_the_bins(calibrated):
    ds, right, conf = calibrated
    assert "calibration" in [c.name for c in charts_for(ds, get_benchmark(ds))]
    traces, layout, summary, _ = CHARTS.get("calibration").draw(ds.view(), ["p"], ALL)
    trace = next(t for t in traces if t["name"] == "p")
    expected = _bins_written_out(right, conf)
    assert trace["x"] == pytest.approx([e[2] for e in expected])
    assert trace["y"] == pytest.approx([e[3] for e in expected])
    assert trace["customdata"] == [e[4] for e in expected]
    gaps = sum(abs(e[2] - e[3]) * e[4] for e in expected) / sum(e[4] for e in expected)
    assert f"ECE {gaps:.3f} (15 equal-width bins)" in summary
    assert "least calibrated factor **" in summary


def test_a_click_shows_the_bins_mistakes(calibrated):
    ds, right, conf = calibrated
    chart = CHARTS.get("calibration")
    traces, *_ = chart.draw(ds.view(), ["p"], ALL)
    trace = next(t for t in traces if t["name"] == "p")
    busiest = int(np.argmax(trace["customdata"]))
    value = trace["ids"][busiest]
    lo, hi = (float(v) for v in value.split(":"))
    drill = chart.click(ds.view(), "p", value, ALL)
    inside = (conf > lo) & (conf <= hi)
    wrong = np.array(ds.values("id"))[inside & ~right]
    assert drill.count == len(wrong) > 0
    assert set(drill.view.values("id")) == set(wrong.tolist())
    assert drill.title == f"confidence ({lo:.3f}, {hi:.3f}]"
