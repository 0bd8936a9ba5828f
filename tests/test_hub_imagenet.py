"""ImageNet itself from the (loopback) Hugging Face Hub: parquet and
webdataset repos in the exact schemas of ILSVRC/imagenet-1k and
timm/imagenet-1k-wds, real JPEG bytes of scikit-image photos under
ImageNet val names."""

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time

import fiftyone as fo
import pytest
import yaml

from conftest import HUB_PORT, TRAIN_FILE, UNANNOTATED_VAL, VAL_FILES, save_photo
from hub_server import serve_repo
from imagenetx.benchmarks.imagenet_x.hub_pull import images_folder as _images_folder
from imagenetx.benchmarks.imagenet_x.sources import load_hub_dataset, load_imagenet_dir
from imagenetx.classes.imagenet import class_table
from imagenetx.errors import ImageNetXError
from imagenetx.store.hub import repo_snapshot

#: file name -> class index of the served val images
VAL = dict(VAL_FILES, **{UNANNOTATED_VAL: 757})
TRAIN_NAME = TRAIN_FILE[1]


def images_folder(repo: str, split: str) -> str:
    """Where a pull of the repo's current revision writes its split."""
    return _images_folder(repo_snapshot(repo), split)


def _wnid(klass: int) -> str:
    return class_table().wnids[klass]


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory) -> dict:
    """Real JPEG bytes per ImageNet file name (4 val images, 1 train)."""
    folder = tmp_path_factory.mktemp("hub-jpegs")
    photos = ["chelsea", "coffee", "astronaut", "rocket", "chelsea"]
    out = {}
    for name, photo in zip(list(VAL) + [TRAIN_NAME], photos):
        out[name] = save_photo(folder / name, photo).read_bytes()
    return out


def _parquet(path, rows) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([
        ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        ("label", pa.int64()),
    ])
    table = pa.Table.from_pylist(
        [{"image": {"bytes": b, "path": p}, "label": label} for p, b, label in rows],
        schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def _tar(path, samples) -> None:
    """A webdataset shard: per sample ``KEY.jpg``, ``KEY.cls``, ``KEY.json``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        for key, data, klass, filename in samples:
            for ext, body in (("jpg", data), ("cls", str(klass).encode()),
                              ("json", json.dumps({"filename": filename,
                                                   "label": klass}).encode())):
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(body)
                tar.addfile(info, io.BytesIO(body))


def _parquet_repo(root, jpegs) -> str:
    """ILSVRC/imagenet-1k's layout; one shard with the older revision's
    ``NAME_WNID.JPEG`` paths, one with plain names."""
    val = sorted(VAL)
    _parquet(root / "data" / "validation-00000-of-00002.parquet", [
        (n.replace(".JPEG", f"_{_wnid(VAL[n])}.JPEG"), jpegs[n], VAL[n]) for n in val[:2]])
    _parquet(root / "data" / "validation-00001-of-00002.parquet", [
        (n, jpegs[n], VAL[n]) for n in val[2:]])
    ladle = class_table().wnids.index(TRAIN_FILE[0])
    _parquet(root / "data" / "train-00000-of-00001.parquet", [
        (TRAIN_NAME.replace(".JPEG", f"_{TRAIN_FILE[0]}.JPEG"), jpegs[TRAIN_NAME], ladle)])
    (root / "README.md").write_text("ImageNet-1k\n")
    return str(root)


def _wds_repo(root, jpegs, per_shard=2) -> str:
    """timm/imagenet-1k-wds's layout."""
    val = sorted(VAL)
    for i in range(0, len(val), per_shard):
        _tar(root / f"imagenet1k-validation-{i // per_shard:02d}.tar", [
            (n[:-5], jpegs[n], VAL[n], f"{_wnid(VAL[n])}/{n}") for n in val[i:i + per_shard]])
    return str(root)


@pytest.fixture(scope="module")
def repos(tmp_path_factory, jpegs):
    tmp = tmp_path_factory.mktemp("hub-repos")
    parquet = _parquet_repo(tmp / "parquet", jpegs)
    wds = _wds_repo(tmp / "wds", jpegs)
    slow = _wds_repo(tmp / "wds-slow", jpegs, per_shard=1)
    other = tmp / "other"
    (other / "data").mkdir(parents=True)
    (other / "data" / "table.csv").write_text("a,b\n")
    servers = [
        serve_repo(HUB_PORT, "test-org/imagenet-1k", parquet),
        serve_repo(HUB_PORT, "test-org/imagenet-1k-wds", wds),
        serve_repo(HUB_PORT, "test-org/imagenet-1k-wds-ref", slow),
        serve_repo(HUB_PORT, "test-org/imagenet-1k-wds-slow", slow, delay=0.6),
        serve_repo(HUB_PORT, "test-org/gated-1k", parquet, tokens={"good-token"}),
        serve_repo(HUB_PORT, "test-org/not-imagenet", str(other)),
    ]
    yield
    for server in servers:
        server.shutdown()


def _docs(ds) -> list:
    """The stored documents, without what differs between any two inserts."""
    skip = {"_id": 0, "_dataset_id": 0, "created_at": 0, "last_modified_at": 0, "_rand": 0}
    docs = [{k: {a: b for a, b in v.items() if a != "_id"} if isinstance(v, dict) else v
             for k, v in d.items()} for d in ds._sample_collection.find({}, skip)]
    return sorted(docs, key=lambda d: d["filepath"])


def _check_images(repo, jpegs, names) -> None:
    folder = images_folder(repo, "val")
    for name in names:
        with open(os.path.join(folder, name), "rb") as f:
            assert f.read() == jpegs[name], name
    on_disk = [f for f in os.listdir(folder) if not f.startswith(".")]
    assert sorted(on_disk) == sorted(names)
    assert os.listdir(os.path.join(folder, ".partial")) == []


@pytest.mark.parametrize("repo,layout", [
    ("test-org/imagenet-1k", "parquet"), ("test-org/imagenet-1k-wds", "webdataset")])
def test_pull_builds_what_the_folder_loader_builds(repos, jpegs, repo, layout):
    seen = []
    ds, s = load_hub_dataset(repo, name=f"hub-{layout}", progress=seen.append)
    assert f"is a {layout} ImageNet repo" in seen[0].label
    assert seen[-1].complete and "2 of 2 shards, 4 images" in seen[-1].label
    assert s.layout == layout and s.images_written == 4 and s.shards == 2
    assert f"'{repo}' at revision {s.revision[:12]} is a {layout} ImageNet repo" in str(s)
    assert s.folder == images_folder(repo, "val") and s.revision in s.folder
    assert ds.info["imagenetx"]["source"] == {
        "hub": repo, "revision": s.revision, "endpoint": os.environ["HF_ENDPOINT"],
        "split": "val", "layout": layout}
    assert sorted(zip(ds.values("filepath"), ds.values("ground_truth.class_index"))) == \
        sorted((os.path.join(images_folder(repo, "val"), n), k) for n, k in VAL.items())
    assert ds.count_sample_tags() == {"x:background": 2, "x:color": 1}
    assert s.annotated == 3 and ds.count("imagenetx") == 3
    _check_images(repo, jpegs, list(VAL))

    ref, _ = load_imagenet_dir(images_folder(repo, "val"), name=f"hub-{layout}-dir")
    assert _docs(ds) == _docs(ref)

    # again: nothing downloaded or written twice, the same documents
    again, s = load_hub_dataset(repo, name=f"hub-{layout}", overwrite=True)
    assert s.images_written == 0 and s.images_present == 4 and s.shards_resumed == 2
    assert _docs(again) == _docs(ref)


def test_train_split_and_max_samples(repos, jpegs):
    ds, s = load_hub_dataset("test-org/imagenet-1k", split="train", name="hub-train")
    assert ds.values("ground_truth.label") == ["ladle"]
    assert ds.count_sample_tags() == {"x:" + ds.first().imagenetx.top_factor: 1}
    path = ds.first().filepath
    assert path.endswith(os.path.join(TRAIN_FILE[0], TRAIN_NAME))
    assert open(path, "rb").read() == jpegs[TRAIN_NAME]

    seen = []
    ds, s = load_hub_dataset("test-org/imagenet-1k-wds", name="hub-max", max_samples=1,
                             overwrite=True, progress=seen.append)
    assert len(ds) == 1 and s.shards == 1 and s.shards_resumed <= 1
    assert seen[-1].complete and "1 of 1 shards" in seen[-1].label  # the shards it takes
    for bad, message in ((dict(max_samples=0), "`max_samples` must be at least 1"),
                         (dict(workers=-1), "`workers` must be at least 1")):
        with pytest.raises(ImageNetXError, match=message):
            load_hub_dataset("test-org/imagenet-1k-wds", name="hub-bad", **bad)
    assert not fo.dataset_exists("hub-bad")
    with pytest.raises(ImageNetXError, match="has no train shards: use `split='val'`"):
        load_hub_dataset("test-org/imagenet-1k-wds-ref", split="train", name="hub-none")


def test_a_pull_keeps_what_a_running_pull_writes(tmp_path):
    """Each pull writes through its own folder: one starting beside a
    running pull of the same split clears only what dead pulls left."""
    from imagenetx.benchmarks.imagenet_x.hub_pull import _Writer

    partial = tmp_path / ".partial"
    (partial / f"{os.getpid()}-running").mkdir(parents=True)
    (partial / f"{os.getpid()}-running" / "a.JPEG").write_bytes(b"x")
    (partial / "4194000-dead").mkdir()
    (partial / "139812345678912-ILSVRC2012_val_00000001.JPEG").write_bytes(b"x")  # older pulls
    writer = _Writer(str(tmp_path))
    writer.start()
    assert sorted(p.name for p in partial.iterdir()) == sorted(
        [f"{os.getpid()}-running", os.path.basename(writer.partial)])
    writer.stop()
    assert (partial / f"{os.getpid()}-running" / "a.JPEG").exists()


def test_unknown_layout_names_the_known_ones(repos):
    with pytest.raises(ImageNetXError) as e:
        load_hub_dataset("test-org/not-imagenet", name="hub-unknown")
    message = str(e.value)
    assert "\n" not in message and "'test-org/not-imagenet' has no layout" in message
    for known in ("FiftyOne-format", "parquet", "webdataset"):
        assert known in message
    assert not fo.dataset_exists("hub-unknown")


def test_a_repo_that_does_not_exist_is_not_called_gated(repos, monkeypatch):
    """The Hub answers 401 for an unknown repo asked without a token: the
    line says the repo was not found, not that it needs a token."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(ImageNetXError) as e:
        load_hub_dataset("test-org/no-such-repo", name="hub-missing")
    message = str(e.value)
    assert "'test-org/no-such-repo' was not found on the Hugging Face Hub" in message
    assert "needs a token" not in message and "\n" not in message
    assert not fo.dataset_exists("hub-missing")


def test_gated_repo_says_what_to_do(repos, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    folder = images_folder("test-org/gated-1k", "val")
    with pytest.raises(ImageNetXError) as e:
        load_hub_dataset("test-org/gated-1k", name="hub-gated")
    message = str(e.value)
    assert "\n" not in message
    assert "'test-org/gated-1k' needs a token (HTTP 401)" in message
    assert "accept its terms at" in message and "set HF_TOKEN" in message
    assert os.listdir(os.path.join(folder, ".shards")) == []

    monkeypatch.setenv("HF_TOKEN", "wrong-token")
    with pytest.raises(ImageNetXError, match=r"refused your token \(HTTP 403\)"):
        load_hub_dataset("test-org/gated-1k", name="hub-gated")
    assert os.listdir(os.path.join(folder, ".shards")) == []
    assert not fo.dataset_exists("hub-gated")
    assert [f for f in os.listdir(folder) if not f.startswith(".")] == []

    ds, s = load_hub_dataset("test-org/gated-1k", name="hub-gated", token="good-token")
    assert len(ds) == 4 and s.images_written == 4


def test_kill_9_then_pull_again(repos, jpegs, tmp_env):
    """A pull killed mid-way leaves whole images only; the next one writes
    each missing image once and builds what an uninterrupted pull builds."""
    repo = "test-org/imagenet-1k-wds-slow"
    markers = os.path.join(images_folder(repo, "val"), ".shards")
    code = ("from imagenetx.benchmarks.imagenet_x.sources import load_hub_dataset;"
            f"load_hub_dataset({repo!r}, name='hub-killed', workers=1)")
    proc = subprocess.Popen([sys.executable, "-c", code], env=tmp_env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if os.path.isdir(markers) and len(os.listdir(markers)) >= 2:
            break
        time.sleep(0.02)
    assert proc.poll() is None, proc.stdout.read().decode()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(os.listdir(markers))
    assert 2 <= done_before < 4 and not fo.dataset_exists("hub-killed")
    # the shards inserted before the kill are in a staged dataset that
    # FiftyOne deletes as non-persistent, never one that passes as done
    staged = [n for n in fo.list_datasets() if n.startswith("hub-killed.loading-")]
    assert all(not fo.load_dataset(n).persistent for n in staged)

    ds, s = load_hub_dataset(repo, name="hub-killed")
    assert s.shards_resumed == done_before
    assert s.images_written + s.images_present == 4
    assert s.images_written == 4 - s.images_present  # each image once
    _check_images(repo, jpegs, list(VAL))

    ref, _ = load_hub_dataset("test-org/imagenet-1k-wds-ref", name="hub-uninterrupted")
    strip = lambda docs: [dict(d, filepath=os.path.basename(d["filepath"])) for d in docs]  # noqa: E731
    assert strip(_docs(ds)) == strip(_docs(ref))


def test_push_then_load_from_hub(repos, jpegs, tmp_path, monkeypatch, capsys):
    """Push a pulled dataset with a prediction field and its evaluation to
    the loopback Hub; FiftyOne's own load_from_hub gets the same fields,
    labels and evaluation; the card names the field and holds the table;
    the gated images are stand-ins until --media-from re-attaches them."""
    import fiftyone.utils.huggingface as fouh
    from hub_server import accept_uploads

    from imagenetx.cli import main
    from imagenetx.store.evaluation import evaluate_predictions
    from imagenetx.store.schema import declare_classification, raw_classification

    accept_uploads(HUB_PORT, str(tmp_path / "uploads"), "test-user")
    monkeypatch.setenv("HF_TOKEN", "write-token")
    ds, _ = load_hub_dataset("test-org/imagenet-1k", name="hub-push", overwrite=True)
    labels = class_table().labels
    wrong = {"ILSVRC2012_val_00000002.JPEG": 0}  # one mistake
    declare_classification(ds, "resnet")
    gts = ds.values("filepath")
    preds = [raw_classification(labels[k], k) for k in
             (wrong.get(os.path.basename(p), VAL[os.path.basename(p)]) for p in gts)]
    ds.set_values("resnet", [fo.Classification.from_dict(p) for p in preds])
    evaluate_predictions(ds, "resnet")
    assert main(["push", "--dataset", "hub-push", "--repo", "other-user/x"]) == 2

    capsys.readouterr()
    assert main(["push", "--dataset", "hub-push", "--repo", "test-user/imagenet-x-results"]) == 0
    # the summary's call, as the command that makes it
    assert ("`imagenetx load imagenet-x --hub test-user/imagenet-x-results`"
            in capsys.readouterr().out)
    card = (tmp_path / "uploads" / "test-user" / "imagenet-x-results" / "README.md").read_text()
    assert "## ImageNet-X results" in card and "`resnet`" in card
    assert "| background |" in card and "dataset_preview.png" in card
    assert "--media-from test-org/imagenet-1k" in card

    pulled = fouh.load_from_hub("test-user/imagenet-x-results", name="hub-pushed",
                                overwrite=True)
    key = lambda d: sorted(zip(map(os.path.basename, d.values("filepath")),  # noqa: E731
                               d.values("ground_truth.label"), d.values("resnet.label"),
                               d.values("eval_resnet"), d.values("imagenetx.top_factor")))
    assert key(pulled) == key(ds)
    assert pulled.list_evaluations() == ["eval_resnet"]
    assert sorted(pulled.count_sample_tags().items()) == sorted(ds.count_sample_tags().items())
    # stand-ins, not the gated images
    assert all(os.path.getsize(p) < 1000 for p in pulled.values("filepath"))

    assert main(["load", "imagenet-x", "--hub", "test-user/imagenet-x-results",
                 "--name", "hub-reattached", "--media-from", "test-org/imagenet-1k"]) == 0
    back = fo.load_dataset("hub-reattached")
    for path in back.values("filepath"):
        assert open(path, "rb").read() == jpegs[os.path.basename(path)]


def test_media_from_a_repo_without_the_images_changes_nothing(repos, tmp_path):
    """--media-from with a repo that holds none of the dataset's file names
    refuses in one line and leaves the file paths as they were."""
    from imagenetx.benchmarks.imagenet_x.hub_pull import reattach_media

    ds = fo.Dataset("hub-unmatched")
    stand_in = str(tmp_path / "ILSVRC2012_val_00049999.JPEG")
    ds.add_sample(fo.Sample(filepath=stand_in))
    with pytest.raises(ImageNetXError, match=r"None of the 1 file names of dataset "
                                             r"'hub-unmatched' \(e.g. ILSVRC2012_val_00049999"):
        reattach_media(ds, "test-org/imagenet-1k-wds")
    assert ds.values("filepath") == [stand_in]


def test_media_from_a_repo_it_cannot_use_is_said_before_loading(repos, capsys):
    from imagenetx.cli import main

    assert main(["load", "imagenet-x", "--hub", "test-org/imagenet-1k-wds",
                 "--name", "hub-media-bad", "--media-from", "test-org/not-imagenet"]) == 2
    assert "'test-org/not-imagenet' has no layout" in capsys.readouterr().err
    assert not fo.dataset_exists("hub-media-bad")


def test_app_operator_pulls_imagenet_shards(repos):
    """Immediate: FiftyOne's executor streams the run; delegated: the
    operation records shards, images and images/s as its progress."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    uri = f"{PLUGIN_NAME}/load_benchmark"
    params = {"benchmark": "imagenet_x", "source": "hub", "hub": "test-org/imagenet-1k-wds",
              "name": "hub-op"}
    result = foo.execute_operator(uri, ctx={"params": params})
    assert result.error is None, result.error
    assert len(fo.load_dataset("hub-op")) == 4

    progress = []
    ctx = ExecutionContext(
        request_params={"params": dict(params, overwrite=True), "delegated": True},
        set_progress=lambda _id, p: progress.append(p.label))
    out = foo.get_operator(uri).execute(ctx)
    assert out["dataset"] == "hub-op" and "webdataset" in out["summary"]
    revision = repo_snapshot("test-org/imagenet-1k-wds").revision
    assert out["revision"] == revision  # the form's result shows the commit
    assert f"at revision {revision[:12]}" in out["summary"]
    assert any("2 of 2 shards, 4 images" in label for label in progress), progress


# --- revisions: a repo that changes upstream --------------------------------


def _pulled(ds) -> list:
    """``(file name, class index, bytes)`` of every sample, by file name."""
    rows = []
    for path, klass in zip(*ds.values(["filepath", "ground_truth.class_index"])):
        with open(path, "rb") as f:
            rows.append((os.path.basename(path), klass, f.read()))
    return sorted(rows)


def test_a_repo_changed_upstream_is_pulled_at_its_new_revision(jpegs, tmp_path, capsys):
    """A pull, then the repo regenerated upstream (every label shifted by
    one, other bytes, a text member fixed into the real JPEG), then a pull
    into a new name: the new labels and bytes, in a new folder; the first
    dataset and its files unchanged; --revision pins the old commit."""
    from imagenetx.cli import main

    repo, root = "test-org/changing", tmp_path / "changing"
    val = sorted(VAL)
    broken = dict(jpegs, **{val[3]: b"this is not a JPEG\n"})
    for i in (0, 2):  # two shards of two
        _tar(root / f"imagenet1k-validation-{i // 2:02d}.tar", [
            (n[:-5], broken[n], VAL[n], f"{_wnid(VAL[n])}/{n}") for n in val[i:i + 2]])
    server = serve_repo(HUB_PORT, repo, str(root), history=True)
    try:
        assert main(["load", "imagenet-x", "--hub", repo, "--name", "hub-rev-old"]) == 0
        out = capsys.readouterr().out
        assert (f"1 unusable member skipped (imagenet1k-validation-01.tar: sample "
                f"'{val[3][:-5]}' is not an image (its bytes begin b'this is not ')") in out
        old = fo.load_dataset("hub-rev-old")
        first = old.info["imagenetx"]["source"]["revision"]
        before = _pulled(old)
        assert [(n, k) for n, k, _ in before] == [(n, VAL[n]) for n in val[:3]]

        shifted = {n: (VAL[n] + 1) % 1000 for n in val}
        photos = dict(zip(val, [jpegs[n] for n in val[1:] + val[:1]]))  # other bytes
        for i in (0, 2):
            _tar(root / f"imagenet1k-validation-{i // 2:02d}.tar", [
                (n[:-5], photos[n], shifted[n], f"{_wnid(shifted[n])}/{n}")
                for n in val[i:i + 2]])
        assert main(["load", "imagenet-x", "--hub", repo, "--name", "hub-rev-new"]) == 0
        out = capsys.readouterr().out
        new = fo.load_dataset("hub-rev-new")
        second = new.info["imagenetx"]["source"]["revision"]
        assert second != first and f"at revision {second[:12]}" in out
        assert "(0 finished by an earlier pull), 4 images written" in out
        assert _pulled(new) == sorted((n, shifted[n], photos[n]) for n in val)
        assert not set(old.values("filepath")) & set(new.values("filepath"))
        assert _pulled(old) == before  # the first pull's dataset and files unchanged

        # --revision pins the first commit: its labels, from its own folder
        assert main(["load", "imagenet-x", "--hub", repo, "--revision", first, "--name",
                     "hub-rev-pinned"]) == 0
        out = capsys.readouterr().out
        assert "(2 finished by an earlier pull), 0 images written" in out
        assert _pulled(fo.load_dataset("hub-rev-pinned")) == before
        assert main(["load", "imagenet-x", "--hub", repo, "--revision", "nope", "--name",
                     "hub-rev-bad"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "'test-org/changing' has no revision 'nope'" in err[0], err
        assert not fo.dataset_exists("hub-rev-bad")
    finally:
        server.shutdown()

    # the pulls on disk, with the datasets that use them; once the second
    # commit's dataset is gone, `cache clear` removes its images and shards
    from huggingface_hub import scan_cache_dir

    assert main(["cache", "list", "--json"]) == 0
    pulls = {p["revision"]: p for p in json.loads(capsys.readouterr().out)["pulls"]
             if p["repo"] == repo}
    assert sorted(pulls[first]["used_by"]) == ["hub-rev-old", "hub-rev-pinned"]
    assert pulls[second]["used_by"] == ["hub-rev-new"] and pulls[second]["images"] == 4
    fo.delete_dataset("hub-rev-new")
    assert main(["cache", "list"]) == 0
    assert "no dataset uses it" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert f"removed {repo} @ {second[:12]}" in out and f"{first[:12]}" not in out
    assert not os.path.exists(pulls[second]["folder"])
    assert _pulled(old) == before
    cached = {r.commit_hash for c in scan_cache_dir().repos if c.repo_id == repo
              for r in c.revisions}
    assert first in cached and second not in cached


# --- shards that are broken, members that are not images --------------------


def _truncated(path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])


def _cut_inside_second_image(path) -> None:
    """Cuts a tar inside its second sample's JPEG: the first sample reads."""
    with tarfile.open(path) as tar:
        second = [m for m in tar.getmembers() if m.name.endswith(".jpg")][1]
    _truncated(path, (second.offset_data + second.size // 2) / path.stat().st_size)


def _bad_repo(kind, root, jpegs) -> None:
    val = sorted(VAL)
    if kind in ("truncated parquet", "random bytes as parquet"):
        shard = root / "data" / "validation-00000-of-00001.parquet"
        _parquet(shard, [(n, jpegs[n], VAL[n]) for n in val])
        if kind == "truncated parquet":
            _truncated(shard)
        else:
            shard.write_bytes(os.urandom(4096))
        return
    samples = [(n[:-5], jpegs[n], VAL[n], f"{_wnid(VAL[n])}/{n}") for n in val]
    if kind == "text member":
        samples[1] = samples[1][:1] + (b"hello, not an image",) + samples[1][2:]
    if kind == "PNG member":
        from PIL import Image

        png = io.BytesIO()
        Image.open(io.BytesIO(jpegs[val[1]])).save(png, "PNG")
        samples[1] = samples[1][:1] + (png.getvalue(),) + samples[1][2:]
    shard = root / "imagenet1k-validation-00.tar"
    _tar(shard, samples)
    if kind == "member with no label":
        with tarfile.open(shard) as tar:
            members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]
        with tarfile.open(shard, "w") as tar:
            for m, data in members:
                if m.name != f"{val[1][:-5]}.cls":
                    tar.addfile(m, io.BytesIO(data))
    if kind == "truncated tar":
        _cut_inside_second_image(shard)


@pytest.mark.parametrize("kind, code, message", [
    ("truncated parquet", 2, "imagenetx load: error: Shard 'data/validation-00000-of-00001."
                             "parquet' cannot be read as parquet (ArrowInvalid: "),
    ("random bytes as parquet", 2, "imagenetx load: error: Shard 'data/validation-00000-of-"
                                   "00001.parquet' cannot be read as parquet (ArrowInvalid: "),
    ("truncated tar", 2, "imagenetx load: error: Shard 'imagenet1k-validation-00.tar' "
                         "cannot be read as a tar archive (ReadError: unexpected end of data"),
    ("text member", 0, "1 unusable member skipped (imagenet1k-validation-00.tar: sample "
                       "'ILSVRC2012_val_00000002' is not an image (its bytes begin "
                       "b'hello, not a'))"),
    ("member with no label", 0, "1 unusable member skipped (imagenet1k-validation-00.tar: "
                                "sample 'ILSVRC2012_val_00000002' has no label)"),
    ("PNG member", 0, "4 images written"),
])
def test_a_bad_shard_is_refused_and_a_bad_member_skipped_by_name(
        jpegs, tmp_path, capsys, kind, code, message):
    """A shard its library cannot read refuses the pull in one line, with no
    dataset and no file of it written (a truncated tar's first, readable
    member neither); a member that is not an image or has no label is
    skipped, named in the summary, and costs only itself; a PNG is an image
    (ImageNet's own train split holds one under a .JPEG name)."""
    from imagenetx.cli import main

    repo = "test-org/bad-" + kind.replace(" ", "-")
    _bad_repo(kind, tmp_path / "repo", jpegs)
    server = serve_repo(HUB_PORT, repo, str(tmp_path / "repo"))
    name = "hub-" + kind.replace(" ", "-")
    try:
        assert main(["load", "imagenet-x", "--hub", repo, "--name", name]) == code
        out, err = capsys.readouterr()
        folder = images_folder(repo, "val")
    finally:
        server.shutdown()
    written = sorted(f for f in os.listdir(folder) if not f.startswith("."))
    assert os.listdir(os.path.join(folder, ".partial")) == []
    if code == 2:
        assert err.startswith(message) and len(err.strip().splitlines()) == 1, err
        assert "nothing of it was written and no dataset was made" in err
        assert not fo.dataset_exists(name) and written == []
        return
    assert message in out, out
    ds = fo.load_dataset(name)
    kept = sorted(VAL) if kind == "PNG member" else [n for n in sorted(VAL)
                                                     if n != "ILSVRC2012_val_00000002.JPEG"]
    assert sorted(os.path.basename(p) for p in ds.values("filepath")) == kept == written
    if kind == "PNG member":
        from PIL import Image

        with Image.open(os.path.join(folder, "ILSVRC2012_val_00000002.JPEG")) as image:
            assert image.format == "PNG"


# --- member names that are folders -------------------------------------------


@pytest.mark.parametrize("layout, names", [
    ("webdataset", ["..", ".", ".shards"]),
    ("parquet", [".", "n01440764/", "n01440764"]),
])
def test_folder_names_are_unusable_members_skipped_by_name(
        jpegs, tmp_path, capsys, layout, names):
    """A member named ``..``, ``.``, a dot name (the pull's own folders), an
    empty base name or a WordNet id (a training class folder) is skipped and
    named; it never becomes a sample whose file is a folder of the pull."""
    from imagenetx.cli import main

    val = sorted(VAL)
    bad = [(name, jpegs[val[0]], VAL[val[0]]) for name in names]
    good = [(n, jpegs[n], VAL[n]) for n in val[1:]]
    root = tmp_path / "repo"
    if layout == "webdataset":
        _tar(root / "imagenet1k-validation-00.tar",
             [(f"k{i}", data, klass, name) for i, (name, data, klass) in enumerate(bad)]
             + [(n[:-5], data, klass, n) for n, data, klass in good])
    else:
        _parquet(root / "data" / "validation-00000-of-00001.parquet", bad + good)
    repo = f"test-org/folder-names-{layout}"
    server = serve_repo(HUB_PORT, repo, str(root))
    try:
        assert main(["load", "imagenet-x", "--hub", repo, "--name", f"hub-names-{layout}"]) == 0
        out = capsys.readouterr().out
        folder = images_folder(repo, "val")
    finally:
        server.shutdown()
    assert f"{len(names)} unusable members skipped" in out, out
    for name in names:
        shown = name.rstrip("/").rsplit("/", 1)[-1] if not name.endswith("/") else ""
        assert f"has an unusable file name {shown!r}" in out, (name, out)
    ds = fo.load_dataset(f"hub-names-{layout}")
    assert sorted(ds.values("filepath")) == sorted(os.path.join(folder, n) for n, _, _ in good)
    assert f"{len(good)} images written and 0 already there" in out


# --- media confined: a repo may name only its own files ----------------------


def _fiftyone_repo(root, photos: list, outside: list, keep_photos: bool = True) -> None:
    """A FiftyOne-format repo (as push_to_hub writes it) of real photos,
    plus samples whose ``filepath`` a repo author chose: absolute paths and
    ``../`` escapes, as ``samples.json`` allows."""
    src = fo.Dataset()
    src.add_samples([fo.Sample(filepath=str(p)) for p in photos])
    src.export(str(root), dataset_type=fo.types.FiftyOneDataset, export_media=True)
    src.delete()
    (root / "fiftyone.yml").write_text("format: FiftyOneDataset\nname: passwd\ntags: []\n")
    doc = json.loads((root / "samples.json").read_text())
    template = doc["samples"][0]
    if not keep_photos:
        doc["samples"] = []
    for k, path in enumerate(outside):
        doc["samples"].append(dict(template, filepath=path, _id={"$oid": f"{k + 1:024x}"}))
    (root / "samples.json").write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def passwd_repo(tmp_path_factory, jpegs):
    """``test-org/passwd``: two real photos and two samples whose media is
    outside the repo: ``/etc/passwd`` and a file of the user's FiftyOne
    folder named through ``../``."""
    tmp = tmp_path_factory.mktemp("passwd")
    photos = [tmp / "photos" / n for n in sorted(VAL)[:2]]
    for p in photos:
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(jpegs[p.name])
    secret = os.path.join(fo.config.default_dataset_dir, "secret.txt")
    os.makedirs(os.path.dirname(secret), exist_ok=True)
    with open(secret, "w") as f:
        f.write("the user's own file\n")
    _fiftyone_repo(tmp / "repo", photos, ["/etc/passwd", "../../../../secret.txt"])
    _fiftyone_repo(tmp / "only-outside", photos[:1], ["/etc/passwd"], keep_photos=False)
    servers = [serve_repo(HUB_PORT, "test-org/passwd", str(tmp / "repo")),
               serve_repo(HUB_PORT, "test-org/only-outside", str(tmp / "only-outside"))]
    yield "test-org/passwd", secret
    for server in servers:
        server.shutdown()


def test_a_pull_drops_and_names_samples_whose_media_is_outside_the_repo(passwd_repo, capsys):
    """``/etc/passwd`` and a ``../`` escape into the FiftyOne folder: both
    samples dropped, counted and named; the repo's own photos kept. A repo
    that names no file of its own makes no dataset."""
    from imagenetx.cli import main
    from imagenetx.store.hub import hub_download_folder

    repo, secret = passwd_repo
    assert main(["load", "imagenet-x", "--hub", repo, "--name", "hub-passwd"]) == 0
    out = capsys.readouterr().out
    folder = hub_download_folder(repo)
    assert (f"2 samples dropped: '{repo}' names media outside its download folder {folder} "
            f"(/etc/passwd, {secret}), which a repo may not name") in out, out
    ds = fo.load_dataset("hub-passwd")
    assert len(ds) == 2
    assert all(p.startswith(folder + os.sep) for p in ds.values("filepath"))

    assert main(["load", "imagenet-x", "--hub", "test-org/only-outside",
                 "--name", "hub-outside"]) == 2
    err = capsys.readouterr().err
    assert "'test-org/only-outside' names no media inside its download folder" in err
    assert "(e.g. /etc/passwd)" in err and not fo.dataset_exists("hub-outside")


def test_a_push_refuses_media_outside_the_repo_unless_named(passwd_repo, tmp_path, capsys,
                                                            monkeypatch):
    """A dataset FiftyOne's own load_from_hub made of the passwd repo (its
    samples keep /etc/passwd): the push refuses in one line and uploads
    nothing; naming the folder of the FiftyOne-folder file lets that one
    through, and the push says what it uploads before it uploads."""
    import fiftyone.utils.huggingface as fouh
    from hub_server import accept_uploads

    from imagenetx.cli import main

    repo, secret = passwd_repo
    uploads = tmp_path / "uploads"
    accept_uploads(HUB_PORT, str(uploads), "test-user")
    monkeypatch.setenv("HF_TOKEN", "write-token")
    ds = fouh.load_from_hub(repo, name="hub-passwd-fo", overwrite=True, persistent=True)
    assert "/etc/passwd" in ds.values("filepath")
    capsys.readouterr()  # load_from_hub's progress bars

    assert main(["push", "--dataset", "hub-passwd-fo", "--repo", "test-user/leak"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert ("'hub-passwd-fo' has 2 samples whose media lies outside the folders its Hub "
            "origin gives it") in err[0]
    assert f"/etc/passwd, {secret}; a push would upload them" in err[0]
    assert f"--media-root /etc {os.path.dirname(secret)}" in err[0]
    assert not (uploads / "test-user" / "leak").exists()
    # the App's form says the same before its Execute (with its own input's label),
    # and what naming a folder allows
    assert _push_form("hub-passwd-fo", {}) == ("Error", err[0].split("error: ", 1)[1].replace(
        "--media-root", "Media folders"))
    allowed = _push_form("hub-passwd-fo", {"media_roots": "/etc\n"
                                                                  + os.path.dirname(secret)})
    assert allowed[0] == "Notice" and allowed[1].startswith("Uploading 4 media files (")

    ds.delete_samples(ds.match({"filepath": "/etc/passwd"}))
    assert main(["push", "--dataset", "hub-passwd-fo", "--repo", "test-user/leak",
                 "--media-root", os.path.dirname(secret)]) == 0
    out = capsys.readouterr().out
    assert out.index("Uploading 3 media files (") < out.index("Pushed 3 samples"), out
    assert "from 2 folders: " in out and f"{os.path.dirname(secret)} (1)" in out
    pushed = sorted(os.listdir(uploads / "test-user" / "leak" / "data"))
    assert "secret.txt" in pushed and "passwd" not in pushed


#: the samples of a repo that names system files only, as the issue found them
ETC_FILES = ["/etc/passwd", "/etc/hostname", "../" * 12 + "etc/hosts"]


def test_a_push_of_a_dataset_of_no_visible_origin_uploads_only_confirmed_folders(
        passwd_repo, tmp_path, jpegs, capsys, monkeypatch):
    """A dataset FiftyOne's own load_from_hub made of a repo that names only
    /etc/passwd, /etc/hostname and a ``../`` escape to /etc/hosts has no
    origin a push can see: refused in one line, nothing uploaded; the
    checkbox of the folders shown does not confirm /etc (a system folder),
    naming it does. A dataset of the user's own files uploads once its
    folder is confirmed (the flag or the App form's checkbox)."""
    import fiftyone.utils.huggingface as fouh
    from hub_server import accept_uploads

    from imagenetx.cli import main

    uploads = tmp_path / "uploads"
    accept_uploads(HUB_PORT, str(uploads), "test-user")
    monkeypatch.setenv("HF_TOKEN", "write-token")
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(jpegs[sorted(VAL)[0]])
    _fiftyone_repo(tmp_path / "repo", [photo], ETC_FILES, keep_photos=False)
    server = serve_repo(HUB_PORT, "test-org/etc-only", str(tmp_path / "repo"))
    try:
        ds = fouh.load_from_hub("test-org/etc-only", name="hub-etc-fo", overwrite=True,
                                persistent=True)
    finally:
        server.shutdown()
    assert sorted(os.path.normpath(p) for p in ds.values("filepath")) == [
        "/etc/hostname", "/etc/hosts", "/etc/passwd"]
    capsys.readouterr()

    for extra in ([], ["--confirm-folders"], ["--media-root", "/"]):
        assert main(["push", "--dataset", "hub-etc-fo", "--repo", "test-user/etc", *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        assert "/etc/passwd" in err[0] and "--media-root /etc" in err[0], err
        assert not (uploads / "test-user" / "etc").exists()
    assert _push_form("hub-etc-fo", {"confirm_folders": True})[0] == "Error"
    assert main(["push", "--dataset", "hub-etc-fo", "--repo", "test-user/etc",
                 "--media-root", "/etc"]) == 0
    assert sorted(os.listdir(uploads / "test-user" / "etc" / "data")) == [
        "hostname", "hosts", "passwd"]
    capsys.readouterr()  # the upload's progress bars

    own = tmp_path / "own"
    own.mkdir()
    names = sorted(VAL)[:2]
    for n in names:
        (own / n).write_bytes(jpegs[n])
    mine = fo.Dataset("push-own-files")
    try:
        mine.add_samples([fo.Sample(filepath=str(own / n)) for n in names])
        assert main(["push", "--dataset", mine.name, "--repo", "test-user/own"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{own} (2)" in err[0] and "--confirm-folders" in err[0], err
        assert not (uploads / "test-user" / "own").exists()
        view, label = _push_form(mine.name, {})
        assert view == "Error" and "Upload from the folders shown (ticked)" in label, label
        assert _push_form(mine.name, {"confirm_folders": True})[1].startswith(
            "Uploading 2 media files (")
        assert main(["push", "--dataset", mine.name, "--repo", "test-user/own",
                     "--confirm-folders"]) == 0
        assert sorted(os.listdir(uploads / "test-user" / "own" / "data")) == names
    finally:
        mine.delete()


def _masks_repo(root, photos: list) -> None:
    """A FiftyOne-format repo of three real photos: the first has a
    detection whose ``mask_path`` is ``/etc/passwd``, the second a
    segmentation inside an embedded document whose ``mask_path`` is
    ``/etc/shadow`` (media paths below the top level, which push_to_hub
    uploads too)."""
    src = fo.Dataset()
    samples = [fo.Sample(filepath=str(p)) for p in photos]
    samples[0]["gt"] = fo.Detections(detections=[fo.Detection(
        label="x", bounding_box=[0, 0, 1, 1], mask_path=str(photos[1]))])
    samples[1]["meta"] = fo.DynamicEmbeddedDocument(seg=fo.Segmentation(mask_path=str(photos[2])))
    src.add_samples(samples, dynamic=True)
    src.export(str(root), dataset_type=fo.types.FiftyOneDataset, export_media=True)
    src.delete()
    (root / "fiftyone.yml").write_text("format: FiftyOneDataset\nname: masks\ntags: []\n")
    doc = json.loads((root / "samples.json").read_text())
    for sample in doc["samples"]:
        if sample.get("gt"):
            sample["gt"]["detections"][0]["mask_path"] = "/etc/passwd"
        if sample.get("meta"):
            sample["meta"]["seg"]["mask_path"] = "/etc/shadow"
    (root / "samples.json").write_text(json.dumps(doc))


def test_media_paths_below_the_top_level_are_confined(tmp_path, jpegs, capsys, monkeypatch):
    """A detection's ``mask_path`` and a segmentation nested in an embedded
    document, both outside the repo: the pull drops their samples; a
    dataset FiftyOne's own load_from_hub made of the repo refuses to push."""
    import fiftyone.utils.huggingface as fouh
    from hub_server import accept_uploads

    from imagenetx.cli import main
    from imagenetx.store.hub import hub_download_folder

    photos = [tmp_path / "photos" / n for n in sorted(VAL)[:3]]
    for p in photos:
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(jpegs[p.name])
    repo = "test-org/nested-masks"
    _masks_repo(tmp_path / "repo", photos)
    server = serve_repo(HUB_PORT, repo, str(tmp_path / "repo"))
    try:
        assert main(["load", "imagenet-x", "--hub", repo, "--name", "hub-masks"]) == 0
        out = capsys.readouterr().out
        assert (f"2 samples dropped: '{repo}' names media outside its download folder "
                f"{hub_download_folder(repo)} (/etc/passwd, /etc/shadow)") in out, out
        assert len(fo.load_dataset("hub-masks")) == 1

        accept_uploads(HUB_PORT, str(tmp_path / "uploads"), "test-user")
        monkeypatch.setenv("HF_TOKEN", "write-token")
        ds = fouh.load_from_hub(repo, name="hub-masks-fo", overwrite=True, persistent=True)
        assert "/etc/passwd" in ds.values("gt.detections.mask_path", unwind=True)
        capsys.readouterr()
        assert main(["push", "--dataset", "hub-masks-fo", "--repo", "test-user/masks"]) == 2
        err = capsys.readouterr().err
        assert "'hub-masks-fo' has 2 samples whose media lies outside" in err, err
        assert "/etc/passwd, /etc/shadow; a push would upload them" in err
        assert not (tmp_path / "uploads" / "test-user" / "masks").exists()
    finally:
        server.shutdown()


# --- the pushed card: user strings shown as written, commands quoted ---------


def test_the_card_shows_user_strings_as_code_and_quotes_its_commands(
        repos, tmp_path, monkeypatch):
    """A dataset name with ``<``, ``>`` and ``$(...)``, a field name with a
    pipe, backticks and an HTML tag, a prompt with ``$(...)`` and a
    checkpoint under the pusher's home: the rendered card holds no HTML of
    theirs, each table row keeps its cells, the commands split back into
    the same words, and no local folder but ``~`` is published."""
    import shlex

    from hub_server import accept_uploads
    from markdown_it import MarkdownIt

    from imagenetx.cli import main
    from imagenetx.store.schema import declare_classification, raw_classification

    home = tmp_path / "home" / "alice"
    monkeypatch.setenv("HOME", str(home))
    accept_uploads(HUB_PORT, str(tmp_path / "uploads"), "test-user")
    monkeypatch.setenv("HF_TOKEN", "write-token")
    name = "card<b>x</b>$(touch pwned)"
    ds, _ = load_hub_dataset("test-org/imagenet-1k", name=name, overwrite=True)
    labels = class_table().labels
    field = "p|`<img src=x onerror=alert(1)>`"
    prompt = "a photo of a {c} $(touch pwned) `id`"
    records = {
        field: {"spec": f"checkpoint:{home}/ckpts/model.pth", "arch": "resnet18"},
        "zs": {"spec": "open_clip:ViT-B-32/openai", "prompt": prompt, "zero_shot": True},
        "outside": {"spec": "checkpoint:/srv/alice-lab/model.pth", "arch": "resnet50"},
    }
    for f, record in records.items():
        declare_classification(ds, f)
        klass = [VAL[os.path.basename(p)] for p in ds.values("filepath")]
        ds.set_values(f, [fo.Classification.from_dict(raw_classification(labels[k], k))
                          for k in klass])
        ds.get_field(f).info = {"imagenetx_model": record}
        ds.get_field(f).save()
    assert main(["push", "--dataset", name, "--repo", "test-user/card"]) == 0
    pushed = tmp_path / "uploads" / "test-user" / "card"
    card = (pushed / "README.md").read_text()
    section = card[card.index("## ImageNet-X results"):]

    body = card.split("---", 2)[2]  # FiftyOne's card and ours, below the YAML header
    html = MarkdownIt("commonmark").enable("table").render(body)
    assert "<img src=x" not in html and "<b>" not in html, html  # only escaped
    for published in (card, (pushed / "metadata.json").read_text()):
        assert str(home) not in published and "/srv/alice-lab" not in published
    assert "~/ckpts/model.pth" in (pushed / "metadata.json").read_text()
    # pushed through a clone, the repo still carries the dataset's own name,
    # which load_from_hub gives the dataset it makes
    assert yaml.safe_load((pushed / "fiftyone.yml").read_text())["name"] == name
    assert json.loads((pushed / "metadata.json").read_text())["name"] == name
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    table = MarkdownIt("commonmark").enable("table").parse("\n".join(rows[:1] + ["|---|---|---|"]
                                                                    + rows[1:4]))
    cells = [t.children[0].content if t.children else "" for t in table
             if t.type == "inline"]
    assert len(cells) == 12, cells  # 4 rows of 3 cells: no pipe split a cell
    by_field = {cells[i]: cells[i + 1: i + 3] for i in range(3, 12, 3)}
    assert set(by_field) == set(records) == {field, "zs", "outside"}
    model, made = by_field[field]
    assert model == "checkpoint:~/ckpts/model.pth"
    assert shlex.split(made) == ["imagenetx", "predict", "--dataset", name, "--model",
                                 "checkpoint:~/ckpts/model.pth", "--field", field,
                                 "--arch", "resnet18"]
    assert shlex.split(by_field["zs"][1])[-2:] == ["--prompt", prompt]
    assert by_field["outside"][0] == "checkpoint:model.pth"


def test_the_push_form_plans_once_per_dataset_state(tmp_path, jpegs, monkeypatch):
    """The App re-resolves the push form on every keystroke: the plan (every
    media path read, every file stat'ed) is made once per dataset state and
    media choice, and made again once the samples or the choices change."""
    import imagenetx.present.push as push

    planned = []
    real = push.plan_push
    monkeypatch.setattr(push, "plan_push", lambda *a, **k: planned.append(a) or real(*a, **k))
    names = sorted(VAL)[:2]
    for n in names:
        (tmp_path / n).write_bytes(jpegs[n])
    ds = fo.Dataset("push-form-plans")
    try:
        ds.add_samples([fo.Sample(filepath=str(tmp_path / n)) for n in names])
        ok = {"confirm_folders": True}  # no Hub origin: the folders confirmed
        first = _push_form(ds.name, ok)
        assert first[1].startswith("Uploading 2 media files (")
        assert _push_form(ds.name, dict(ok, private=True)) == first and len(planned) == 1
        assert _push_form(ds.name, dict(ok, media_roots="/srv")) == first
        assert len(planned) == 2  # another choice, another plan
        assert _push_form(ds.name, {})[0] == "Error" and len(planned) == 3
        ds.delete_samples(ds.take(1))
        assert _push_form(ds.name, ok)[1].startswith("Uploading 1 media file (")
        assert len(planned) == 4
    finally:
        ds.delete()


def _push_form(dataset: str, params: dict) -> tuple:
    """``(view, label)`` of the plan the App's push form shows."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    ctx = ExecutionContext(request_params={"dataset_name": dataset,
                                           "params": dict(params, repo_id="test-user/x")})
    form = foo.get_operator(f"{PLUGIN_NAME}/push_to_hub").resolve_input(ctx)
    view = form.type.properties["plan"].view
    return type(view).__name__, view.label


# --- cache clear: other databases, other servers, other tools' files ---------


def _cache_list(capsys) -> dict:
    """repo -> its pull, as `cache list --json` gives it."""
    from imagenetx.cli import main

    assert main(["cache", "list", "--json"]) == 0
    return {p["repo"]: p for p in json.loads(capsys.readouterr().out)["pulls"]}


def test_a_pull_whose_database_note_cannot_be_read_counts_as_unseen(tmp_path, jpegs):
    """A damaged note may have named another server: the pull is not unused
    (a clear keeps it without --force) and its note is named."""
    import shutil

    from imagenetx.benchmarks.imagenet_x.hub_pull import DATABASES, pulls_root
    from imagenetx.benchmarks.imagenet_x.pull_cache import cached_pulls

    folder = os.path.join(pulls_root(), "127.0.0.1_1", "test-org", "bad-note", "a" * 40)
    name = sorted(VAL)[0]
    os.makedirs(os.path.join(folder, "val"))
    os.makedirs(os.path.join(folder, DATABASES))
    try:
        with open(os.path.join(folder, "val", name), "wb") as f:
            f.write(jpegs[name])
        note = os.path.join(folder, DATABASES, "0123456789abcdef.json")
        with open(note, "w") as f:
            f.write('{"id": "cut short')
        pull = next(p for p in cached_pulls() if p.folder == folder)
        assert not pull.unused and len(pull.unseen) == 1, pull
        assert pull.unseen[0].startswith(f"a database server its unreadable note {note} may name")
    finally:
        shutil.rmtree(os.path.dirname(folder))


def test_cache_clear_spares_pulls_other_databases_and_servers_use(
        jpegs, tmp_path, tmp_env, capsys):
    """Two pulls made by other processes: one into a second database
    (another FIFTYONE_DATABASE_NAME on the same server and FiftyOne folder),
    one into a database on another server (the project's database service
    on another data folder). `cache clear` here keeps the first (its dataset
    is named) and keeps the second naming that server (its datasets cannot
    be seen from here). Once the second database is gone, the clear removes
    the first pull's images and the shards it read, while a file another
    tool put in the same Hub cache commit stays; --force removes the second."""
    import fiftyone.core.odm as foo
    from huggingface_hub import hf_hub_download, scan_cache_dir

    from imagenetx.cli import main

    two_dbs, other_server = "test-org/two-databases", "test-org/other-server"
    for repo in (two_dbs, other_server):
        _wds_repo(tmp_path / repo, jpegs)
    (tmp_path / two_dbs / "README.md").write_text("another tool reads this\n")
    other_db = f"{fo.config.database_name}-other"
    data_folder = tmp_path / "other-server-data"
    server_env = dict(tmp_env, FIFTYONE_DATABASE_DIR=str(data_folder),
                      IMAGENETX_DB_AUTOSTART="1")
    servers = [serve_repo(HUB_PORT, r, str(tmp_path / r)) for r in (two_dbs, other_server)]
    try:
        # one after the other: run at once, the first pull's dataset was not
        # found on this server (FiftyOne's own database may attach to another
        # mongod it finds running)
        for env, repo, name in ((dict(tmp_env, FIFTYONE_DATABASE_NAME=other_db), two_dbs,
                                 "hub-other-db"),
                                (server_env, other_server, "hub-other-server")):
            done = subprocess.run([sys.executable, "-m", "imagenetx", "load", "imagenet-x",
                                   "--hub", repo, "--name", name], env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stdout + done.stderr
        revision = repo_snapshot(two_dbs).revision
        readme = hf_hub_download(two_dbs, "README.md", repo_type="dataset", revision=revision)
        second = repo_snapshot(other_server).revision
    finally:
        for server in servers:
            server.shutdown()
        subprocess.run([sys.executable, "-m", "imagenetx", "db", "stop"], env=server_env,
                       capture_output=True, timeout=120)
    try:
        listed = _cache_list(capsys)
        pull, elsewhere = listed[two_dbs], listed[other_server]
        assert pull["used_by"] == [f"hub-other-db (database {other_db})"]
        assert pull["images"] == 4 and pull["unseen"] == []
        assert elsewhere["used_by"] == [] and len(elsewhere["unseen"]) == 1, elsewhere
        unseen = elsewhere["unseen"][0]
        assert unseen.startswith("a dataset on another database server, mongodb://127.0.0.1:")
        assert unseen.endswith(f":{data_folder})"), unseen  # (data folder HOST:PATH)

        assert main(["cache", "clear"]) == 0
        out = capsys.readouterr().out
        assert f"removed {two_dbs}" not in out and os.path.isdir(pull["folder"])
        assert f"kept {other_server} @ {second[:12]}" in out and f"may be used by {unseen}" in out
        assert "pass --force to remove them" in out and os.path.isdir(elsewhere["folder"])

        foo.get_db_client().drop_database(other_db)
        assert main(["cache", "clear"]) == 0
        out = capsys.readouterr().out
        assert f"removed {two_dbs} @ {revision[:12]}" in out, out
        assert not os.path.exists(pull["folder"]) and os.path.isdir(elsewhere["folder"])
    finally:
        foo.get_db_client().drop_database(other_db)
    files = {os.path.basename(str(f.file_path)) for c in scan_cache_dir().repos
             if c.repo_id == two_dbs for r in c.revisions if r.commit_hash == revision
             for f in r.files}
    assert files == {"README.md"}  # the shards gone, the other tool's file kept
    assert open(readme).read() == "another tool reads this\n"

    assert main(["cache", "clear", "--force"]) == 0
    assert f"removed {other_server} @ {second[:12]}" in capsys.readouterr().out
    assert not os.path.exists(elsewhere["folder"])
