"""Issue 52's smaller findings, each as a user meets it: ``discover
--embeddings`` on a field that holds no vectors, and ``load --dir`` given a
file (the plug-ins' are in test_plugins.py, the column cache's in
test_column_cache.py)."""

import fiftyone as fo
import pytest

from imagenetx.benchmarks import loadable_benchmarks
from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset
from imagenetx.cli import main
from imagenetx.store.classifications import write_classifications

N = 40


@pytest.fixture
def tagged():
    """N tagged validation file names with a prediction field ``a``, a
    string field ``note`` and a float list field ``vec`` of mixed lengths."""
    name = "small-fixes-52"
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    ds.add_samples(fo.Sample(filepath=f"/data/val/ILSVRC2012_val_{i:08d}.JPEG")
                   for i in range(1, N + 1))
    tag_dataset(ds)
    write_classifications(ds, "a", ds.values("id"), anno.val_labels()[:N])
    ds.set_values("note", ["x"] * N)
    yield ds
    ds.delete()


@pytest.mark.parametrize("field, kind", [("a", "Classification"), ("note", "StringField"),
                                         ("ground_truth", "Classification")])
def test_discover_on_a_field_of_no_vectors_names_its_type(tagged, capsys, field, kind):
    assert main(["discover", "--dataset", tagged.name, "--pred-field", "a",
                 "--embeddings", field]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].split(": error: ", 1)[1] == (
        f"--embeddings {field} is a {kind} field of dataset "
        f"'{tagged.name}', not embeddings: give a field of one vector per sample (written by "
        "`imagenetx embed` or FiftyOne Brain's compute_embeddings)"), err


def test_load_dir_given_a_file_says_so_for_every_benchmark(tmp_path, capsys):
    path = tmp_path / "ILSVRC2012_val_00000001.JPEG"
    path.write_bytes(b"\xff\xd8\xff")
    with_dir = [n.replace("_", "-") for n, b in loadable_benchmarks().items()
                if b.loading.source("dir") is not None]
    assert {"imagenet-x", "imagenet-d", "imagenet-e", "cue-conflict", "imagenet-a"} <= set(
        with_dir)
    for benchmark in with_dir:
        assert main(["load", benchmark, "--dir", str(path), "--name", "never"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].split(": error: ", 1)[1].startswith(
            f"--dir {path} is a file, not a folder: give "), (benchmark, err)
        assert not fo.dataset_exists("never")
