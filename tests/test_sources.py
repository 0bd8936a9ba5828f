"""Loading local ImageNet folders and Hugging Face Hub datasets."""

import shutil

import fiftyone as fo
import pytest

from conftest import TRAIN_FILE, VAL_FILES, save_photo
from imagenetx.errors import ImageNetXError
from imagenetx.benchmarks.imagenet_x.sources import load_hub_dataset, load_imagenet_dir


def test_flat_validation_folder(photos_dir):
    ds, summary = load_imagenet_dir(str(photos_dir), name="src-flat")
    assert summary.files_found == 4  # holiday.jpg is not an ImageNet file
    assert summary.tagging.annotated == 3
    assert summary.annotations_missing_file == 48868 - 3
    assert len(ds) == 4 and ds.persistent
    # ground truth for every image, annotated or not, from the val labels
    assert sorted(ds.values("ground_truth.class_index")) == sorted(
        list(VAL_FILES.values()) + [757]
    )
    assert ds.count_sample_tags() == {"x:background": 2, "x:color": 1}


def test_the_benchmark_loads_a_local_imagenet_folder(photos_dir):
    from imagenetx.benchmarks.imagenet_x.benchmark import ImageNetX

    ds, summary = ImageNetX().load(dir=str(photos_dir), name="src-benchmark")
    assert summary.files_found == 4 and summary.tagging.annotated == 3
    assert ds.count_sample_tags() == {"x:background": 2, "x:color": 1}


def test_wnid_folders_for_val_and_train(tmp_path, photos_dir):
    root = tmp_path / "imagenet"
    for name, klass in VAL_FILES.items():
        from imagenetx.classes.imagenet import class_table

        wnid = class_table().wnids[klass]
        (root / "val" / wnid).mkdir(parents=True, exist_ok=True)
        shutil.copy(photos_dir / name, root / "val" / wnid / name)
    save_photo(root / "train" / TRAIN_FILE[0] / TRAIN_FILE[1])
    save_photo(root / "train" / "n01440764" / "n01440764_10026.JPEG")

    ds, summary = load_imagenet_dir(str(root), split="val", name="src-wnid")
    assert summary.files_found == 3 and summary.tagging.annotated == 3

    ds, summary = load_imagenet_dir(str(root), split="train", name="src-train")
    assert summary.files_found == 2 and summary.tagging.annotated == 1
    assert sorted(ds.values("ground_truth.label")) == ["ladle", "tench"]
    assert summary.annotations_missing_file == 11233 - 1


def test_bad_folders_and_existing_names(tmp_path, photos_dir):
    with pytest.raises(ImageNetXError, match="does not exist"):
        load_imagenet_dir(str(tmp_path / "missing"))
    save_photo(tmp_path / "plain" / "cat.jpg")
    with pytest.raises(ImageNetXError, match="holds no ImageNet val images"):
        load_imagenet_dir(str(tmp_path / "plain"))

    load_imagenet_dir(str(photos_dir), name="src-exists")
    fo.load_dataset("src-exists").tag_samples("keep-me")
    with pytest.raises(ImageNetXError, match="`overwrite=True`"):
        load_imagenet_dir(str(photos_dir), name="src-exists")
    assert fo.load_dataset("src-exists").count_sample_tags()["keep-me"] == 4


def test_load_from_the_hub_then_tag(hub_repo):
    ds, summary = load_hub_dataset(hub_repo, name="src-hub", max_samples=5)
    assert len(ds) == 5
    assert summary.annotated == 3
    assert ds.count_sample_tags() == {"x:background": 2, "x:color": 1}


def test_hub_errors_are_clear(hub_repo):
    with pytest.raises(ImageNetXError, match="not a Hugging Face Hub repo id"):
        load_hub_dataset("just-a-name")
    with pytest.raises(ImageNetXError, match="test-org/missing"):
        load_hub_dataset("test-org/missing", name="src-hub-missing")
