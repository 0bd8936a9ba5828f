"""Parsing the packaged annotations, checked against the original toolkit."""


import numpy as np
import pytest

from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.classes import imagenet as factors
from imagenetx.errors import ImageNetXError
from imagenetx.classes.imagenet import METACLASSES, class_table
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.classes.labels import labels_to_indices


def test_val_split_matches_the_original_toolkit():
    from imagenet_x import load_annotations

    val = anno.load_split("val")
    assert len(val) == 48868
    assert int((~val.prototype).sum()) == 46110  # the paper's default

    for which, matrix in (("top", val.top), ("multi", val.multi)):
        ref = load_annotations(which_factor=which, partition="val",
                               filter_prototypes=False)
        ref = ref.set_index("file_name").loc[val.file_names]
        assert np.array_equal(ref[list(FACTORS)].to_numpy(bool), matrix)
        assert np.array_equal(ref["class"].to_numpy(), val.class_index)
        metaclass = np.array(class_table().metaclass)[val.class_index]
        assert list(ref["metaclass"]) == list(metaclass)

    kept = load_annotations("top", "val", filter_prototypes=True)
    assert set(kept.file_name) == set(val.file_names[~val.prototype])


def test_train_split_and_top_factor_names():
    train = anno.load_split("train")
    assert len(train) == 11233 and not train.prototype.any()
    row = train.row_of["n03633091_15528.JPEG"]
    assert train.class_index[row] == 618  # ladle
    assert train.top_factor[row] == "background"
    # a handful of images have no top factor at all
    assert sum(f is None for f in anno.load_split("val").top_factor) == 2


def test_class_table_and_metaclasses():
    table = class_table()
    assert len(table.names) == 1000 and table.names[0] == "tench"
    assert table.wnids[0] == "n01440764"
    assert set(table.metaclass) == set(METACLASSES)
    assert table.metaclass[65] == "snake"


def test_validation_labels_and_real_labels():
    assert anno.val_labels()[0] == 65
    real = anno.real_labels()
    assert len(real) == 50000 and real[0] == [] and real[1] == [970, 795]
    assert anno.class_of_file("ILSVRC2012_val_00000001.JPEG") == 65
    assert anno.class_of_file("n01440764_10026.JPEG") == 0
    assert anno.class_of_file("holiday.jpg") is None


def test_labels_in_any_scheme_map_to_indices():
    labels = [0, "7", "n01440764", "tench", "Tench", "great_white_shark",
              "tench, Tinca tinca", "Carcharodon carcharias"]
    assert list(labels_to_indices(labels)) == [0, 7, 0, 0, 0, 2, 0, 2]
    # "crane" names a bird (134) and a machine (517): the hint settles it
    assert list(labels_to_indices(["crane"], hints=[517])) == [517]
    with pytest.raises(ImageNetXError, match="'crane'"):
        labels_to_indices(["crane"])
    with pytest.raises(ImageNetXError, match="cannot be mapped.*'not a class', 1000"):
        labels_to_indices(["tench", "not a class", 1000])


def test_unreadable_annotation_file_gives_one_clear_error(tmp_path, monkeypatch):
    source = factors.annotations_dir()
    for f in source.iterdir():
        (tmp_path / f.name).symlink_to(f)
    (tmp_path / "imagenet_x_val_top_factor.jsonl").unlink()
    (tmp_path / "imagenet_x_val_top_factor.jsonl").write_text('{"file_name": ')
    monkeypatch.setenv(factors.ANNOTATIONS_DIR_ENV, str(tmp_path))
    anno.load_split.cache_clear()
    try:
        with pytest.raises(ImageNetXError) as e:
            anno.load_split("val")
        message = str(e.value)
        assert "imagenet_x_val_top_factor.jsonl" in message
        assert "pip install --force-reinstall imagenet-x" in message
    finally:
        anno.load_split.cache_clear()
