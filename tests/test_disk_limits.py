"""What the file system cannot hold: a file name longer than it allows is
shortened (and said), a full disk is one line naming the folder and the
space needed. Webdataset repos on the loopback Hub, as in
tests/test_hub_imagenet.py; a small tmpfs for the full disk."""

import errno
import io
import json
import os
import subprocess
import sys
import tarfile
import uuid

import fiftyone as fo
import numpy as np
import pytest

from conftest import HUB_PORT, VAL_FILES, save_photo
from hub_server import serve_repo
from imagenetx.benchmarks.imagenet_x.hub_pull import images_folder
from imagenetx.disk import NAME_MAX, fitting_name, user_error_of, write_file
from imagenetx.errors import ImageNetXError
from imagenetx.store.hub import repo_snapshot

#: the size of the small file system of the full-disk tests
SMALL_FS = "20m"


def _tar(path, samples) -> None:
    """A webdataset shard: per sample ``KEY.jpg``, ``KEY.cls`` and, where
    a file name is given, ``KEY.json``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        for key, data, klass, filename in samples:
            parts = [("jpg", data), ("cls", str(klass).encode())]
            if filename:
                parts.append(("json", json.dumps({"filename": filename}).encode()))
            for ext, body in parts:
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(body)
                tar.addfile(info, io.BytesIO(body))


def _pull(repo: str, folder, name: str):
    """``imagenetx load imagenet-x --hub REPO`` in this process: ``(exit
    status, stdout, stderr)``."""
    import contextlib

    from imagenetx.cli import main

    server = serve_repo(HUB_PORT, repo, str(folder))
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["load", "imagenet-x", "--hub", repo, "--name", name, "--overwrite"])
    finally:
        server.shutdown()
    return code, out.getvalue(), err.getvalue()


# --- a file name longer than the file system holds ---------------------------


def test_a_300_character_member_name_is_shortened_said_and_loaded(tmp_path):
    """A webdataset sample whose file name is 300 characters (the tar's
    member names longer still) is stored under a name that fits, ending in
    a hash of the whole name and its extension; the summary says so, the
    sample loads, and a second pull finds the file again (nothing written)."""
    photo = save_photo(tmp_path / "photo.jpg", "chelsea").read_bytes()
    long_name = "ILSVRC2012_val_" + "x" * (300 - len("ILSVRC2012_val_.JPEG")) + ".JPEG"
    assert len(long_name) == 300
    normal = sorted(VAL_FILES)[0]
    _tar(tmp_path / "repo" / "imagenet1k-validation-00.tar", [
        ("k" * 300, photo, 7, long_name),   # a 304-character member name
        (normal[:-5], photo, VAL_FILES[normal], normal),
    ])
    repo = "test-org/long-names"
    name = f"long-names-{uuid.uuid4().hex[:6]}"

    code, out, err = _pull(repo, tmp_path / "repo", name)

    assert code == 0 and err == "", err
    assert "1 file name longer than the file system holds shortened" in out, out
    assert "Traceback" not in out + err
    ds = fo.load_dataset(name)
    try:
        by_label = dict(zip(ds.values("ground_truth.class_index"), ds.values("filepath")))
        stored = by_label[7]
        base = os.path.basename(stored)
        assert len(os.fsencode(base)) <= NAME_MAX and base.endswith(".JPEG")
        assert base.startswith("ILSVRC2012_val_xxx") and base != long_name
        assert base[-24:] in out  # the new name is named (its end: the hash)
        assert open(stored, "rb").read() == photo
        assert os.path.basename(by_label[VAL_FILES[normal]]) == normal

        # a second pull of the same revision finds the shortened file again
        server = serve_repo(HUB_PORT, repo, str(tmp_path / "repo"))
        try:
            folder = images_folder(repo_snapshot(repo), "val")
        finally:
            server.shutdown()
        marker = os.path.join(folder, ".shards")
        for f in os.listdir(marker):  # not resumed from the marker: the files are looked for
            os.remove(os.path.join(marker, f))
        code, out, err = _pull(repo, tmp_path / "repo", name)
        assert code == 0 and err == "", err
        assert "0 images written and 2 already there" in out, out
        assert sorted(fo.load_dataset(name).values("filepath")) == sorted(by_label.values())
    finally:
        fo.delete_dataset(name)


def test_a_shortened_name_is_stable_fits_and_keeps_its_extension():
    """The same long name gives the same short one; different long names
    with the same beginning give different ones; multi-byte characters are
    counted in bytes and never cut in half; short names stay as they are."""
    base = "é" * 200 + ".JPEG"  # 405 bytes in UTF-8
    short = fitting_name(base)
    assert short == fitting_name(base) and short.endswith(".JPEG")
    assert len(os.fsencode(short)) <= NAME_MAX and short.startswith("é")
    assert short.encode("utf-8").decode("utf-8") == short  # whole characters
    assert fitting_name("é" * 199 + "a.JPEG") != short
    assert fitting_name("ILSVRC2012_val_00000001.JPEG") == "ILSVRC2012_val_00000001.JPEG"
    assert len(os.fsencode(fitting_name("a" * 300, 143))) <= 143


# --- a full disk ---------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 20 MB tmpfs mounted at a fresh folder, unmounted afterwards;
    skipped where mounting is not allowed (not root, a sandbox, CI)."""
    folder = tmp_path / "small"
    folder.mkdir()
    if os.name != "posix" or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the full-disk pull needs a small disk)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SMALL_FS}", "tmpfs",
                           str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs was refused here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@pytest.fixture(scope="module")
def big_repo(tmp_path_factory):
    """A webdataset repo of 24 random-noise JPEGs (about 28 MB, more than
    the small disk holds) in two shards of 12."""
    from PIL import Image

    noise = np.random.default_rng(0).integers(0, 256, (1000, 1000, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(noise).save(buffer, "JPEG", quality=95)
    data = buffer.getvalue()
    root = tmp_path_factory.mktemp("big-repo")
    names = [f"ILSVRC2012_val_{k:08d}" for k in range(100, 124)]
    for shard in range(2):
        _tar(root / f"imagenet1k-validation-{shard:02d}.tar",
             [(n, data, k, n + ".JPEG") for k, n in enumerate(names) if k // 12 == shard])
    size = sum(p.stat().st_size for p in root.iterdir())
    assert size > 25 * 2 ** 20
    return root


def _pull_in_a_process(repo: str, folder, name: str, env: dict):
    server = serve_repo(HUB_PORT, repo, str(folder))
    try:
        return subprocess.run(
            [sys.executable, "-m", "imagenetx", "load", "imagenet-x", "--hub", repo,
             "--name", name], env=env, capture_output=True, text=True, timeout=600)
    finally:
        server.shutdown()


def test_a_full_disk_during_a_pull_is_one_line_and_makes_no_dataset(
        big_repo, small_disk, tmp_env):
    """The pull's folder on a 20 MB disk and a 28 MB repo: the command
    prints one line naming the folder, the image being written, the bytes
    the pull needs and the space free; it exits 2, makes no dataset, and
    leaves no half-written shard."""
    repo, name = "test-org/too-big", f"too-big-{uuid.uuid4().hex[:6]}"
    env = dict(tmp_env, FIFTYONE_DEFAULT_DATASET_DIR=str(small_disk / "fiftyone"))

    done = _pull_in_a_process(repo, big_repo, name, env)

    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    line = lines[0]
    assert line.startswith("imagenetx load: error: No space left in " + str(small_disk)), line
    assert "/test-org/too-big/" in line and "writing ILSVRC2012_val_" in line
    assert "needed (the 2 val shards of 'test-org/too-big')" in line and "free there" in line
    assert "FIFTYONE_DEFAULT_DATASET_DIR" in line and "made no dataset" in line
    assert not fo.dataset_exists(name)
    split = next(small_disk.glob("fiftyone/imagenet/*/test-org/too-big/*/val"))
    assert os.listdir(split / ".partial") == []  # nothing staged is left
    images = [f for f in os.listdir(split) if not f.startswith(".")]
    assert len(images) in (0, 12)  # whole shards only


def test_a_full_hub_cache_is_one_line_and_makes_no_dataset(
        big_repo, small_disk, tmp_path, tmp_env):
    """huggingface_hub's cache on a 20 MB disk and a shard larger than it:
    the command prints one line naming the cache folder, the shard and the
    bytes it needs, exits 2 and makes no dataset."""
    repo, name = "test-org/too-big-shard", f"too-big-shard-{uuid.uuid4().hex[:6]}"
    one_shard = tmp_path / "one-shard"
    one_shard.mkdir()
    with tarfile.open(one_shard / "imagenet1k-validation-00.tar", "w") as out:
        for shard in sorted(big_repo.iterdir()):
            with tarfile.open(shard) as tar:
                for member in tar:
                    out.addfile(member, tar.extractfile(member))
    env = dict(tmp_env, HF_HOME=str(small_disk / "hf"))

    done = _pull_in_a_process(repo, one_shard, name, env)

    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    line = lines[0]
    assert line.startswith(f"imagenetx load: error: No space left in {small_disk / 'hf'}"), line
    assert "writing 'imagenet1k-validation-00.tar' of 'test-org/too-big-shard'" in line
    assert "MB needed" in line and "HF_HOME" in line
    assert not fo.dataset_exists(name)


def test_a_real_full_disk_error_becomes_one_line(tmp_path):
    """Without a small disk to fill: /dev/full fails every write with a
    real ENOSPC. The conversion the command line and the App use turns it
    (and a library's error raised from it) into one ImageNetXError line;
    other errors stay themselves."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system to fail a write with ENOSPC")
    with pytest.raises(OSError) as raised:
        with open("/dev/full", "wb") as f:
            f.write(b"x" * 4096)
    assert raised.value.errno == errno.ENOSPC
    error = user_error_of(raised.value)
    assert isinstance(error, ImageNetXError) and "\n" not in str(error)
    assert str(error).startswith("No space left on the disk written to (No space left on device)")

    try:
        try:
            raise raised.value
        except OSError as e:
            raise RuntimeError("a library's own error") from e
    except RuntimeError as wrapped:
        assert str(user_error_of(wrapped)) == str(error)
    assert user_error_of(ValueError("no")) is None


def test_a_report_file_on_a_full_disk_is_one_line_and_left_out(small_disk):
    """A report's page or table too large for its disk: one line naming the
    folder, the file and its size; no part of the file is left, and an
    older page of the same name stays whole."""
    page = small_disk / "report.html"
    write_file(str(page), "<html>older</html>")
    with pytest.raises(ImageNetXError) as raised:
        write_file(str(page), b"x" * (25 * 2 ** 20),
                   "free some space there, or write the report elsewhere (`out`)")
    message = str(raised.value)
    assert message.startswith(f"No space left in {small_disk} (No space left on device) "
                              "writing report.html (25.0 MB): "), message
    assert "free there; free some space there" in message and "\n" not in message
    assert os.listdir(small_disk) == ["report.html"]
    assert page.read_text() == "<html>older</html>"
