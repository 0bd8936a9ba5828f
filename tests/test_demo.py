"""The offline demo, end to end through the command line."""

import csv

import fiftyone as fo
import numpy as np
import pytest
from PIL import Image

from conftest import SHARED_DATA
from imagenetx.analysis import slice_accuracies
from imagenetx.cli import main
from imagenetx.benchmarks.imagenet_x.factors import FACTORS

HUMAN_TABLE = (
    SHARED_DATA / "results/val/top_factor/base/real_class/accuracies_per_factor.csv"
)


@pytest.mark.slow
def test_demo_builds_all_annotated_images_and_reports_label_bias(
    demo_build, capsys
):
    _, out = demo_build
    assert "48,868 samples" in out
    assert "imagenetx app --dataset demo-test" in out
    assert "subcategory" in out and "all images" in out
    # the table counts empty ReaL sets wrong; the panel's default differs, and both say so
    assert "empty ReaL set = wrong" in out
    assert ("The ImageNet-X panel opens with Correct if: ReaL and Empty ReaL sets: clean "
            "(those images left out); pick 'paper' there for this table's figures") in out

    ds = fo.load_dataset("demo-test")
    assert len(ds) == 48868
    counts = ds.count_sample_tags()
    assert sum(counts.values()) == 48866  # two images have no top factor
    assert counts["x:texture"] == 286
    assert ds.count("ground_truth") == 48868
    assert ds.count("imagenet_labels") == 48868
    assert len(ds.distinct("imagenetx.metaclass")) == 17

    # placeholders: real readable images that show the class
    path = ds.first().filepath
    with Image.open(path) as im:
        assert im.size == (192, 192)

    # running it again refuses to replace the dataset, which is kept
    assert main(["demo", "--name", "demo-test"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert len(fo.load_dataset("demo-test")) == 48868


@pytest.mark.slow
@pytest.mark.skipif(not HUMAN_TABLE.exists(), reason="../shared/data absent")
def test_label_bias_equals_the_authors_human_row_exactly(demo_build):
    """ImageNet's labels scored against ReaL (empty ReaL set = wrong),
    top factors, prototypes left out: the `human` row of the authors'
    real_class table, to the last bit."""
    table = slice_accuracies(
        "demo-test", "imagenet_labels", correct="real", real_mode="paper"
    )
    with open(HUMAN_TABLE) as f:
        human = next(r for r in csv.DictReader(f) if r["model"] == "human")

    assert table.n_total == 46110
    assert table.accuracy == float(human["average"])
    for factor, acc in zip(FACTORS, table.slice_accuracy):
        assert acc == float(human[factor]), factor
    assert table.worst_slice_accuracy == float(human["worst_factor"])
    expected_ratio = (1 - np.array([float(human[f]) for f in FACTORS])) / (
        1 - float(human["average"]))
    assert np.array_equal(table.error_ratio, expected_ratio)
