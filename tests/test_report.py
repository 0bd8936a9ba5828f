"""The HTML report: command line and App operator."""

import csv
import re
import subprocess
import sys

import fiftyone.operators as foo
import pytest

from conftest import REPO
from imagenetx.analysis import compute_ratios
from imagenetx.app.install import PLUGIN_NAME, install_plugin


@pytest.mark.slow
def test_report_command_writes_the_page_and_its_tables(demo_build, tmp_path, tmp_env):
    name, _ = demo_build
    out = tmp_path / "label-bias.html"
    run = subprocess.run(
        [sys.executable, "-m", "imagenetx", "report", "--dataset", name,
         "--pred-field", "imagenet_labels", "--correct", "real",
         "--out", str(out)],
        env=tmp_env, cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert str(out) in run.stdout

    page = out.read_text()
    assert page.count("<script") >= 4  # plotly.js inlined, then 3 figures
    assert not re.findall(r"<script[^>]*\bsrc=", page)  # opens offline
    for title in ("Figure 1", "Table 4", "Figure 2", "Figure 8"):
        assert title in page
    assert "subcategory" in page

    with open(tmp_path / "label-bias_error_ratios.csv") as f:
        rows = {r["slice"]: r for r in csv.DictReader(f)}
    expected = compute_ratios(name, "imagenet_labels", correct="real").to_dict()
    texture = expected["models"]["imagenet_labels"]["slices"]["texture"]
    assert float(rows["texture"]["error_ratio"]) == texture["error_ratio"]
    assert int(rows["texture"]["n"]) == texture["n"]
    # the correctness mode was applied: ImageNet's labels are exactly right
    # by class, so only ReaL gives them mistakes, and clean mode leaves the
    # images with an empty ReaL set out
    assert "correct = real (clean)" in page
    by_class = compute_ratios(name, "imagenet_labels", correct="class").to_dict()
    assert by_class["models"]["imagenet_labels"]["accuracy"] == 1.0
    assert float(rows["all"]["accuracy"]) == expected["models"]["imagenet_labels"]["accuracy"] < 0.95
    assert int(rows["all"]["n"]) == expected["models"]["imagenet_labels"]["n"] < 46110
    with open(tmp_path / "label-bias_table4.csv") as f:
        table4 = list(csv.DictReader(f))
    assert len(table4) == 17  # one row per meta-class
    dog = next(r for r in table4 if r["group"] == "dog")
    assert dog["susceptible"].startswith("color")

    # bad --out: one clear line, exit 2
    run = subprocess.run(
        [sys.executable, "-m", "imagenetx", "report", "--dataset", name,
         "--pred-field", "imagenet_labels", "--out", str(tmp_path / "x.txt")],
        env=tmp_env, cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and ".html" in run.stderr


@pytest.mark.slow
def test_export_report_operator(demo_build, tmp_path):
    name, _ = demo_build
    install_plugin()
    out = tmp_path / "op.html"
    result = foo.execute_operator(
        f"{PLUGIN_NAME}/export_report",
        ctx={"dataset": name, "params": {
            "pred_fields": ["imagenet_labels"], "out": str(out),
            "correct": "real"}},
    )
    assert result.result["html"] == str(out)
    assert out.stat().st_size > 1_000_000
    assert len(result.result["csvs"]) == 5
