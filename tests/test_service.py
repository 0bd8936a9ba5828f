"""The database service the commands share, and its faults: concurrent cold
starts, killed service processes, stale files, a database URI that does not
answer.

Every test here runs on a private data folder (``FIFTYONE_DATABASE_DIR``)
and stops only processes whose command line names that folder.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from pymongo import MongoClient

from conftest import REPO

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the service needs flock")


def _pids_on(folder: Path) -> list:
    """Processes (ours) whose command line names the folder."""
    import psutil

    return [p for p in psutil.process_iter(["cmdline"])
            if str(folder) in " ".join(p.info["cmdline"] or [])]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A private data folder; nothing left running on it afterwards."""
    folder = tmp_path_factory.mktemp("service") / "db"
    yield folder
    subprocess.run([sys.executable, "-m", "imagenetx", "db", "stop"], env=_env(folder),
                   cwd=REPO, capture_output=True, timeout=120)
    left = _pids_on(folder)
    for p in left:
        p.kill()
    assert not left, f"left running: {[p.info['cmdline'] for p in left]}"


def _env(folder: Path, **extra) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), FIFTYONE_DATABASE_DIR=str(folder),
               FIFTYONE_DATABASE_NAME="service-test", IMAGENETX_DB_AUTOSTART="1")
    env.pop("FIFTYONE_DATABASE_URI", None)
    return dict(env, **extra)


def _start(folder, *args, **extra):
    return subprocess.Popen([sys.executable, "-m", "imagenetx", *args], env=_env(folder, **extra),
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run(folder, *args, timeout=300, **extra):
    proc = _start(folder, *args, **extra)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def _state(folder: Path) -> dict:
    return json.loads((folder / "imagenetx-db.json").read_text())


def _datasets(folder: Path) -> list:
    with MongoClient(f"mongodb://127.0.0.1:{_state(folder)['port']}",
                     serverSelectionTimeoutMS=10000) as client:
        return sorted(client["service-test"].datasets.distinct("name"))


def test_four_commands_at_once_on_a_cold_folder(folder, photos_dir):
    procs = [_start(folder, "load", "imagenet-x", "--dir", str(photos_dir),
                    "--name", f"cold-{i}") for i in range(4)]
    results = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
        assert "3 with ImageNet-X annotations" in out
    # one of them started the service and said so; the others connected to it
    started = [err for _, err in results if "started the database service" in err]
    assert len(started) == 1
    assert _datasets(folder) == [f"cold-{i}" for i in range(4)]
    assert len([p for p in _pids_on(folder) if "mongod" in p.info["cmdline"][0]]) == 1


def test_db_start_when_one_runs_says_where(folder):
    state = _state(folder)
    status, out, err = _run(folder, "db", "start")
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert f"mongod pid {state['mongod']} on port {state['port']}" in err
    assert str(folder) in err and "imagenetx db stop" in err


def test_a_command_joins_a_running_service_it_has_no_file_for(folder):
    """A FiftyOne service already on the folder (here ours, its state file
    gone): the command registers with it as FiftyOne's processes do, and
    starts no second mongod on the folder."""
    state_file = folder / "imagenetx-db.json"
    saved = state_file.read_text()
    state_file.unlink()
    try:
        status, out, err = _run(folder, "tag", "--dataset", "cold-3")
        assert status == 0, err
        assert "started" not in err
    finally:
        state_file.write_text(saved)
    mongods = [p for p in _pids_on(folder) if "mongod" in p.info["cmdline"][0]]
    assert [p.pid for p in mongods] == [json.loads(saved)["mongod"]]


def test_killed_service_leaves_an_orphan_the_next_command_stops(folder):
    """The keeper and FiftyOne's service process SIGKILLed at one instant
    (stopped first, so neither sees the other die and stops mongod), their
    mongod left behind holding the folder, the state file naming the dead
    keeper: the next command stops the orphan cleanly, starts a new service,
    and the data is intact."""
    state = _state(folder)
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        for pid in (state["keeper"], state["wrapper"]):
            os.kill(pid, sig)
    status, out, err = _run(folder, "tag", "--dataset", "cold-0")
    assert status == 0, err
    lines = err.strip().splitlines()
    # the orphan is stopped by the command, unless it went first by itself
    orphan_line = (f"imagenetx: stopped orphaned mongod pid {state['mongod']} (its FiftyOne "
                   f"service was gone) that held {folder}; the data there is kept")
    assert orphan_line in lines or any("started the database service" in x for x in lines)
    assert not psutil.pid_exists(state["mongod"]) or (
        psutil.Process(state["mongod"]).status() == psutil.STATUS_ZOMBIE)
    assert f"imagenetx: {folder / 'imagenetx-db.json'} names keeper pid {state['keeper']}, " \
           "which no longer runs: replacing it" in lines
    assert _state(folder)["mongod"] != state["mongod"]
    assert _datasets(folder) == [f"cold-{i}" for i in range(4)]


def test_killed_process_group_of_the_service(folder):
    """The service's process group (FiftyOne's service process and its
    mongod) SIGKILLed, and a lock file left behind: the next command starts
    a new service on the same data."""
    state = _state(folder)
    os.killpg(os.getpgid(state["wrapper"]), signal.SIGKILL)
    (folder / "imagenetx-db.lock").write_text("123456789")  # held by no one
    status, out, err = _run(folder, "tag", "--dataset", "cold-1")
    assert status == 0, err
    assert "started the database service" in err
    assert _datasets(folder) == [f"cold-{i}" for i in range(4)]


def test_database_uri_pointing_nowhere(folder):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    uri = f"mongodb://127.0.0.1:{port}"
    status, out, err = _run(folder, "tag", "--dataset", "x", FIFTYONE_DATABASE_URI=uri)
    assert status == 2
    assert err.strip().splitlines() == [
        f"imagenetx tag: error: no database answers at {uri} (FIFTYONE_DATABASE_URI): start "
        "that MongoDB server, or unset FIFTYONE_DATABASE_URI to use FiftyOne's own database"]
