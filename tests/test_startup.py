"""Start-up of the `imagenetx` command: help that imports nothing heavy."""

import subprocess
import sys

import pytest

from conftest import REPO, SHARED_DATA

HEAVY = ("fiftyone", "torch", "scipy")

#: runs the command line in a fresh interpreter, then prints which heavy
#: packages it imported
_PROBE = """
import sys
from imagenetx.cli import main
try:
    status = main(sys.argv[1:])
except SystemExit as e:
    status = e.code
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(%r))
print("STATUS", status, "HEAVY", ",".join(heavy) or "-", file=sys.stderr)
""" % (HEAVY,)


def _help_imports(tmp_env, *args):
    r = subprocess.run([sys.executable, "-c", _PROBE, *args], env=tmp_env, cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    last = r.stderr.strip().splitlines()[-1].split()
    return r.stdout, last[1], last[3]


@pytest.mark.parametrize("command", [None, "ratios", "load", "predict", "biases", "db"])
def test_help_imports_neither_fiftyone_nor_torch(tmp_env, command):
    out, status, heavy = _help_imports(tmp_env, *([command] if command else []), "--help")
    assert status == "0"
    assert heavy == "-", f"--help imported {heavy}"
    assert f"usage: imagenetx {command or 'COMMAND'}" in out


def test_no_arguments_prints_the_groups(tmp_env):
    out, status, heavy = _help_imports(tmp_env)
    assert status == "0" and heavy == "-"
    for title in ("build datasets:", "predictions and probes:", "analysis:",
                  "published tables:", "report:", "App, plugin and database:"):
        assert title in out
    assert "  ratios " in out and "  import-predictions " in out


@pytest.fixture(scope="module")
def read_dataset(photos_dir):
    """A tagged dataset with one prediction field, for the read commands."""
    from conftest import make_dataset
    from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset
    from imagenetx.store.classifications import write_classifications

    ds = make_dataset("startup-read", photos_dir)
    tag_dataset(ds.name)
    truth = ds.exists("ground_truth")
    write_classifications(ds, "p", truth.values("id"),
                          truth.values("ground_truth.class_index"),
                          confidence=[0.9] * truth.count())
    return ds


#: the commands that only read a run's numbers, and what each prints
READ_COMMANDS = {
    "ratios": ([], "p"),
    "report": (["--out", "{tmp}/report.html"], "report.html"),
    "discover": (["--min-support", "1"], "p"),
    "context": (["--json", "--results-dir", str(SHARED_DATA / "results")], "p"),
}


@pytest.mark.parametrize("command", sorted(READ_COMMANDS))
def test_reading_a_runs_numbers_imports_no_torch(tmp_env, tmp_path, read_dataset, command):
    """Reading a run's numbers (`ratios`, `report`, `discover` over factors,
    `context`, with their readouts: the population, comparability and
    published-accuracy lines) loads no model library."""
    extra, shown = READ_COMMANDS[command]
    if command == "context" and not (SHARED_DATA / "results").is_dir():
        pytest.skip(f"the authors' results are not in {SHARED_DATA}")
    extra = [a.format(tmp=tmp_path) for a in extra]
    r = subprocess.run([sys.executable, "-c", _PROBE, command, "--dataset", read_dataset.name,
                        "--pred-field", "p", *extra], env=tmp_env, cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    last = r.stderr.strip().splitlines()[-1].split()
    assert last[1] == "0", r.stderr[-2000:]
    assert "torch" not in last[3].split(","), f"`{command}` imported {last[3]}"
    assert shown in r.stdout
