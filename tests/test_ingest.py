"""The bulk sample writer: a dataset loaded through it equals one built with
FiftyOne's own ``add_samples()`` from the same files (schema, dataset
settings, every field of every stored document except ids and times),
FiftyOne's App-facing operations work on it, and a failed load keeps the
dataset it was to replace.

The loaders read file names and a file's first bytes (is it an image?), not
pixels, so the folders hold files of a JPEG's first bytes alone.
"""

import os
from datetime import datetime
from pathlib import Path

import fiftyone as fo
import pytest
from bson import ObjectId

from conftest import TRAIN_FILE, UNANNOTATED_VAL, VAL_FILES, save_photo
from imagenetx.benchmarks.imagenet_e import load_imagenet_e
from imagenetx.benchmarks.imagenet_x.sources import load_imagenet_dir
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset
from imagenetx.benchmarks.ood import load_ood_dir
from imagenetx.classes.imagenet import class_table
from imagenetx.errors import ImageNetXError
from imagenetx.store.datasets import all_slices
from imagenetx.store.ingest import insert_samples, new_dataset

#: the stored keys that differ between two loads of the same files
VOLATILE = {"created_at", "last_modified_at", "_rand", "_dataset_id"}


def touch(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\xff\xd8\xff\xe0")  # a JPEG's first bytes
    return str(path)


def field_documents(ds) -> list:
    """The dataset's stored field declarations, less their creation times."""

    def strip(d):
        d = {k: v for k, v in d.items() if k != "created_at"}
        if d.get("fields"):
            d["fields"] = [strip(f) for f in d["fields"]]
        return d

    return [strip(f.to_dict()) for f in ds._doc.sample_fields]


def stored(ds) -> list:
    """Every stored sample document, sorted by file path, with ObjectIds
    numbered in order of appearance (so group ids that samples share stay
    shared) and the volatile keys checked and dropped."""
    numbers = {}

    def canonical(value):
        if isinstance(value, ObjectId):
            return numbers.setdefault(value, len(numbers))
        if isinstance(value, dict):
            return {k: canonical(v) for k, v in value.items()}
        if isinstance(value, list):
            return [canonical(v) for v in value]
        return value

    docs = sorted(ds._sample_collection.find(), key=lambda d: d["filepath"])
    out = []
    for doc in docs:
        assert doc["_dataset_id"] == ds._doc.id
        assert 0.999 <= doc["_rand"] <= 1.0
        assert isinstance(doc["created_at"], datetime)
        assert isinstance(doc["last_modified_at"], datetime)
        out.append(canonical({k: v for k, v in doc.items() if k not in VOLATILE}))
    return out


def assert_same_dataset(fast, reference):
    assert fast.media_type == reference.media_type
    assert fast.group_field == reference.group_field
    assert fast.group_media_types == reference.group_media_types
    assert fast.default_group_slice == reference.default_group_slice
    assert fast.info == reference.info
    assert field_documents(fast) == field_documents(reference)
    assert list(fast.get_field_schema(flat=True)) == list(
        reference.get_field_schema(flat=True)
    )
    assert stored(fast) == stored(reference)

    # as FiftyOne reads them: every field of every sample but the ids
    def samples(ds):
        return sorted(
            (
                {k: v for k, v in s.to_dict().items() if k not in ("_id", "created_at",
                                                                     "last_modified_at")}
                for s in all_slices(ds)
            ),
            key=lambda d: d["filepath"],
        )

    def no_ids(value):
        if isinstance(value, dict):
            return {k: no_ids(v) for k, v in value.items() if k != "_id"}
        if isinstance(value, list):
            return [no_ids(v) for v in value]
        return value

    assert no_ids(samples(fast)) == no_ids(samples(reference))


def old_declarations(ds, gt="ground_truth", imagenetx=True):
    """The ImageNet-X fields declared one path at a time, as the loaders
    did before the bulk writer."""
    ds.add_sample_field(gt, fo.EmbeddedDocumentField, embedded_doc_type=fo.Classification)
    ds.add_sample_field(f"{gt}.class_index", fo.IntField)
    if imagenetx:
        ds.add_sample_field("imagenetx", fo.EmbeddedDocumentField,
                            embedded_doc_type=fo.DynamicEmbeddedDocument)
        for sub, ftype in (("top_factor", fo.StringField), ("factors", fo.ListField),
                           ("metaclass", fo.StringField), ("justification", fo.StringField),
                           ("one_word", fo.StringField), ("prototype", fo.BooleanField),
                           ("split", fo.StringField), ("real_labels", fo.ListField)):
            kwargs = {}
            if ftype is fo.ListField:
                kwargs["subfield"] = fo.IntField if sub == "real_labels" else fo.StringField
            ds.add_sample_field(f"imagenetx.{sub}", ftype, **kwargs)


def classification(index: int) -> fo.Classification:
    return fo.Classification(label=class_table().labels[index], class_index=index)


@pytest.fixture(scope="module")
def imagenet_dir(tmp_path_factory) -> Path:
    """A flat val folder (annotated, unannotated, not ImageNet) and a train
    folder of WordNet id folders."""
    root = tmp_path_factory.mktemp("ingest-imagenet")
    for name in [*VAL_FILES, UNANNOTATED_VAL, "holiday.jpg"]:
        touch(root / "val" / name)
    touch(root / "train" / TRAIN_FILE[0] / TRAIN_FILE[1])
    touch(root / "train" / "n01440764" / "n01440764_10026.JPEG")
    return root


@pytest.mark.parametrize("split", ["val", "train"])
def test_imagenet_folder_equals_add_samples_then_tagging(imagenet_dir, split):
    fast, summary = load_imagenet_dir(str(imagenet_dir), split=split,
                                      name=f"ingest-{split}", overwrite=True)

    # the loader before the bulk writer: FiftyOne's add_samples, then the
    # ground truth, then tag_dataset
    ref = fo.Dataset(f"ingest-{split}-ref", overwrite=True)
    folder = imagenet_dir / split
    paths = sorted((p for p in folder.rglob("*.JPEG")), key=lambda p: p.name)
    classes = ([VAL_FILES.get(p.name, 757) for p in paths] if split == "val"
               else [class_table().wnids.index(p.parent.name) for p in paths])
    old_declarations(ref)
    ref.add_samples(fo.Sample(filepath=str(p), ground_truth=classification(c))
                    for p, c in zip(paths, classes))
    ref_summary = tag_dataset(ref)

    assert_same_dataset(fast, ref)
    assert str(summary.tagging).replace(fast.name, "X") == str(ref_summary).replace(ref.name, "X")
    assert summary.files_found == len(paths)


def test_imagenet_c_folder_equals_add_samples(tmp_path):
    paths = []
    for corruption, severity, index in (("fog", 1, 0), ("fog", 5, 281), ("frost", 3, 281)):
        wnid = class_table().wnids[index]
        for k in range(2):
            paths.append((touch(tmp_path / "c" / corruption / str(severity) / wnid / f"{k}.JPEG"),
                          corruption, severity, index))
    fast, _ = load_ood_dir("c", str(tmp_path / "c"), name="ingest-c", overwrite=True)

    ref = fo.Dataset("ingest-c-ref", overwrite=True)
    old_declarations(ref, imagenetx=False)
    ref.add_samples(fo.Sample(filepath=p, ground_truth=classification(i), corruption=c,
                              severity=s) for p, c, s, i in sorted(paths))
    ref.info["imagenetx"] = {"benchmark": "imagenet_c"}
    ref.save()
    assert_same_dataset(fast, ref)

    # FiftyOne's App-facing operations on the bulk-written dataset
    assert fast.count_values("corruption") == {"fog": 4, "frost": 2}
    assert fast.match(fo.ViewField("severity") > 2).count() == 4
    assert fast.bounds("ground_truth.class_index") == (0, 281)
    fast.tag_samples("seen")
    assert fast.match_tags("seen").count() == 6
    fast.set_values("ground_truth.confidence", [0.5] * 6)
    assert fast.mean("ground_truth.confidence") == 0.5
    assert fo.load_dataset("ingest-c").first().ground_truth.label == "tench"


def test_imagenet_e_release_equals_add_samples_then_tagging(tmp_path):
    stems = list(VAL_FILES)[:2] + ["ILSVRC2012_val_00000099"]
    stems = [os.path.splitext(s)[0] for s in stems]
    labels = {stems[0]: 65, stems[1]: 970, stems[2]: 1}
    release = tmp_path / "imagenet-e"
    files = []
    for folder, ext, edit, level in (("ori", ".JPEG", "original", None),
                                     ("20_adv", ".png", "background", "adversarial"),
                                     ("rd", ".png", "direction", "random")):
        for stem in stems[:2] if folder == "rd" else stems:
            files.append((folder, stem, touch(release / folder / f"{stem}{ext}"), edit, level))
    (release / "labels.txt").write_text(
        "".join(f"{s}.JPEG {i}\n" for s, i in labels.items()))
    fast, summary = load_imagenet_e(str(release), name="ingest-e", overwrite=True)

    ref = fo.Dataset("ingest-e-ref", overwrite=True)
    ref.add_group_field("group", default="ori")
    groups = {s: fo.Group() for s in stems}
    old_declarations(ref, imagenetx=False)
    ref.add_sample_field("edit", fo.StringField)
    ref.add_sample_field("edit_level", fo.StringField)
    ref.add_samples(fo.Sample(filepath=path, group=groups[stem].element(folder),
                              ground_truth=classification(labels[stem]), edit=edit,
                              edit_level=level)
                    for folder, stem, path, edit, level in files)
    old_declarations(ref, gt="ground_truth")  # adds the imagenetx paths only
    tagged = tag_dataset(ref, by_stem=True)
    ref.info["imagenetx"] = {"benchmark": "imagenet_e"}
    ref.save()

    assert_same_dataset(fast, ref)
    assert summary.annotated == tagged.annotated > 0
    assert fast.select_group_slices("rd").count() == 2


def test_a_failed_load_keeps_the_dataset_it_replaces(imagenet_dir, tmp_path):
    old, _ = load_imagenet_dir(str(imagenet_dir), name="ingest-keep", overwrite=True)
    old.tag_samples("keep-me")
    # bad input is refused before anything is written
    (tmp_path / "plain").mkdir()
    with pytest.raises(ImageNetXError, match="holds no ImageNet val images"):
        load_imagenet_dir(str(tmp_path / "plain"), name="ingest-keep", overwrite=True)
    # a document the database refuses, after others went in
    too_large = "x" * (17 * 1024 * 1024)
    rows = [{"filepath": f"/data/{k}.jpg"} for k in range(3)] + [{"filepath": too_large}]
    before = set(fo.list_datasets())
    with pytest.raises(Exception):
        with new_dataset("ingest-keep", overwrite=True) as ds:
            insert_samples(ds, rows)
    assert set(fo.list_datasets()) == before  # the half-built copy is gone
    kept = fo.load_dataset("ingest-keep")
    assert kept.count() == 4 and kept.count_sample_tags()["keep-me"] == 4

    # a complete load replaces it
    new, _ = load_imagenet_dir(str(imagenet_dir), name="ingest-keep", overwrite=True)
    assert new.name == "ingest-keep" and "keep-me" not in new.count_sample_tags()
    assert set(fo.list_datasets()) == before


def test_paths_tags_and_none_values_as_add_samples_stores_them():
    rows = [{"filepath": "relative/a.jpg", "tags": ["t"], "note": "n"},
            {"filepath": "~/b.png", "note": None},
            {"filepath": "/data/../c.JPEG", "tags": None},
            {"filepath": "d.jpg"}]
    with new_dataset("ingest-paths", overwrite=True) as fast:
        fast.add_sample_field("note", fo.StringField)
        assert insert_samples(fast, [dict(r) for r in rows]) == 4
    ref = fo.Dataset("ingest-paths-ref", overwrite=True)
    ref.add_sample_field("note", fo.StringField)
    ref.add_samples(fo.Sample(**{k: v for k, v in r.items() if k != "tags"},
                              tags=r.get("tags") or []) for r in rows)
    assert_same_dataset(fast, ref)


def test_overwrite_says_what_it_replaced(caplog):
    """--overwrite replaces a dataset whole, and one line says what it held
    (the command line prints the warning)."""
    import logging

    from imagenetx.store.datasets import make_dataset
    from imagenetx.store.ingest import new_dataset

    name = "ingest-replaced"
    old = make_dataset(name, overwrite=True)
    old.add_samples([fo.Sample(filepath=f"/nowhere/{i}.jpg",
                               resnet50=fo.Classification(label="tabby")) for i in range(2)])
    with caplog.at_level(logging.WARNING, logger="imagenetx"):
        with new_dataset(name, overwrite=True) as ds:
            ds.add_sample(fo.Sample(filepath="/nowhere/new.jpg"))
    assert (f"Replaced dataset '{name}' (`overwrite=True`), which held 2 samples; fields: "
            "resnet50") in caplog.text
    assert len(fo.load_dataset(name)) == 1
    fo.delete_dataset(name)


@pytest.mark.parametrize("content, says", [
    (b"<!DOCTYPE html><html>403 Forbidden</html>", "its first bytes 3c21444f"),
    (b"", "it is empty"),
])
def test_a_file_named_as_an_image_that_is_not_one_is_refused_and_nothing_is_stored(
        tmp_path, capsys, content, says):
    from imagenetx.cli import main

    root = tmp_path / "imagenet"
    save_photo(root / "val" / "ILSVRC2012_val_00000001.JPEG")
    bad = root / "val" / "ILSVRC2012_val_00000002.JPEG"
    bad.write_bytes(content)
    name = "ingest-not-an-image"
    if fo.dataset_exists(name):  # left by an earlier run of this test
        fo.delete_dataset(name)
    with pytest.raises(ImageNetXError) as error:
        load_imagenet_dir(str(root), split="val", name=name)
    message = str(error.value)
    assert "\n" not in message and f"'{bad}'" in message and says in message, message
    assert "replace it with the image, or remove it" in message, message
    assert not fo.dataset_exists(name)

    assert main(["load", "imagenet-x", "--dir", str(root), "--name", name]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"'{bad}'" in err, err
    assert not fo.dataset_exists(name)
