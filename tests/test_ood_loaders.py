"""OOD-detection benchmarks loaded from folders laid out as each release is
(ImageNet-O, NINCO, OpenOOD v1.5's ImageNet-1K), with 8 x 8 placeholder
JPEGs named as the folders and lists name them: roles, sources, classes and
counts; ImageNet-O holds only the val images of its classes; NINCO's unit
tests are generated, seeded, from the very val images the authors picked;
missing images and wrong layouts are one line each."""

import csv
from pathlib import Path

import fiftyone as fo
import numpy as np
import pytest
from PIL import Image

from conftest import REPO
from imagenetx.benchmarks import get_benchmark
from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.benchmarks.ood_detection import unit_tests
from imagenetx.benchmarks.ood_detection.contract import CLASS_FIELD, ROLE_FIELD, SOURCE_FIELD
from imagenetx.benchmarks.ood_detection.loaders import (
    load_imagenet_o,
    load_ninco,
    load_openood_imagenet,
    unit_test_val_files,
)
from imagenetx.benchmarks.scenarios import FieldNames
from imagenetx.classes.imagenet import class_table
from imagenetx.cli import main
from imagenetx.errors import ImageNetXError

SHARED = REPO.parent / "shared" / "data" / "openood"
LISTS = SHARED / "benchmark_imglist"

#: ImageNet-O's classes here: two of its 200 (goldfish, tree frog)
O_CLASSES = (1, 31)
#: val images written: 2 of each ImageNet-O class, 3 of other classes
OTHER_CLASSES = (0, 281, 999)


def _jpeg(path: Path, value: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), (value % 256, 40, 90)).save(path, format="JPEG")
    return path


def _val_files_of(klass: int, n: int) -> list:
    names, labels = anno.filename_labels()
    return [f for f, c in zip(names, labels) if c == klass][:n]


@pytest.fixture(scope="module")
def val_dir(tmp_path_factory) -> Path:
    """A flat ImageNet val folder: two images of each ImageNet-O class here,
    one of three other classes, and the sources of NINCO's first unit-test
    image of each kind."""
    folder = tmp_path_factory.mktemp("val")
    files = [f for c in O_CLASSES for f in _val_files_of(c, 2)]
    files += [f for c in OTHER_CLASSES for f in _val_files_of(c, 1)]
    files += list(unit_test_val_files(1).values())
    for k, name in enumerate(dict.fromkeys(files)):
        _jpeg(folder / name, k)
    return folder


def _columns(ds, *paths):
    return list(zip(*(ds.values(p) for p in paths)))


def _one_line(e) -> str:
    text = str(e.value)
    assert "\n" not in text and "--" not in text, text
    return text


# -- ImageNet-O ------------------------------------------------------------------


@pytest.fixture(scope="module")
def imagenet_o_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("imagenet-o-release") / "imagenet-o"
    wnids = class_table().wnids
    for k, name in enumerate(("a.jpg", "b.JPEG", "c.jpg")):
        _jpeg(root / wnids[O_CLASSES[k % 2]] / name, k)
    (root / "README.txt").write_text("not an image\n")
    return root.parent  # the archive's parent folder is found too


def test_imagenet_o_holds_its_images_and_only_the_val_images_of_its_classes(
        imagenet_o_dir, val_dir, capsys):
    assert main(["load", "imagenet-o", "--dir", str(imagenet_o_dir), "--imagenet-dir",
                 str(val_dir), "--name", "ood-load-o", "--overwrite"]) == 0
    assert "ImageNet-O dataset 'ood-load-o'" in capsys.readouterr().out
    ds = fo.load_dataset("ood-load-o")
    wnids, labels = class_table().wnids, class_table().labels
    rows = _columns(ds, "filepath", ROLE_FIELD, SOURCE_FIELD, CLASS_FIELD, "ground_truth")
    ood = [r for r in rows if r[1] == "ood"]
    assert sorted((Path(p).name, s, c, g) for p, _, s, c, g in ood) == [
        ("a.jpg", "imagenet_o", wnids[1], None), ("b.JPEG", "imagenet_o", wnids[31], None),
        ("c.jpg", "imagenet_o", wnids[1], None)]
    ids = {Path(p).name: (s, c, g) for p, role, s, c, g in rows if role == "id"}
    in_val = {p.name: anno.class_of_file(p.name) for p in val_dir.iterdir()}
    expected = {f: k for f, k in in_val.items() if k in O_CLASSES}
    assert len(expected) >= 4 and len(in_val) > len(expected) + 3
    assert set(ids) == set(expected)  # no val image of another class
    for name, (source, ood_class, gt) in ids.items():
        assert (source, ood_class) == ("imagenet_val", None)
        assert (gt.class_index, gt.label) == (expected[name], labels[expected[name]])
    info = ds.info["imagenetx"]
    assert info["benchmark"] == "imagenet_o"
    assert info["ood"] == {"class_indices": list(O_CLASSES)}
    benchmark = get_benchmark(ds)
    assert benchmark.name == "imagenet_o" and benchmark.needs_logits
    role = benchmark.slicing(ds, FieldNames(), "ood_role")
    assert (role.path, role.values) == (ROLE_FIELD, ("id", "ood"))


def test_imagenet_o_needs_the_val_folder_and_its_release_layout(imagenet_o_dir, val_dir,
                                                               tmp_path):
    with pytest.raises(ImageNetXError) as e:
        load_imagenet_o(str(imagenet_o_dir), name="ood-load-o-bad")
    assert "pass `imagenet_dir`" in _one_line(e)
    (tmp_path / "goldfish").mkdir()
    _jpeg(tmp_path / "goldfish" / "x.jpg")
    with pytest.raises(ImageNetXError) as e:
        load_imagenet_o(str(tmp_path), imagenet_dir=str(val_dir), name="ood-load-o-bad")
    assert "not in the ImageNet-O release layout <wnid>/<image>" in _one_line(e)
    assert not fo.dataset_exists("ood-load-o-bad")


# -- NINCO -----------------------------------------------------------------------


NINCO_IMAGES = {"Caracal caracal caracal": ("Caracal caracal caracal_000_000-10896690.jpg",
                                            "Caracal caracal caracal_001_001-11713603.png"),
                "bagpipe": ("bagpipe_000.jpeg",)}


@pytest.fixture(scope="module")
def ninco_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ninco-release") / "NINCO"
    for k, (klass, files) in enumerate(NINCO_IMAGES.items()):
        for name in files:
            _jpeg(root / "NINCO_OOD_classes" / klass / name, k)
    _jpeg(root / "NINCO_OOD_unit_tests" / "uni" / "uni_000_uni_00112.png")  # not read
    _jpeg(root / "NINCO_popular_datasets_subsamples" / "SSB_hard" / "x.jpg")  # not read
    return root.parent


def test_ninco_loads_its_classes_generated_unit_tests_and_imagenet_val(ninco_dir, val_dir,
                                                                      tmp_path):
    out = tmp_path / "unit-tests"
    assert main(["load", "ninco", "--dir", str(ninco_dir), "--imagenet-dir", str(val_dir),
                 "--unit-tests", "1", "--seed", "3", "--unit-tests-dir", str(out),
                 "--name", "ood-load-ninco", "--overwrite"]) == 0
    ds = fo.load_dataset("ood-load-ninco")
    rows = _columns(ds, "filepath", ROLE_FIELD, SOURCE_FIELD, CLASS_FIELD)
    near = sorted((Path(p).name, c) for p, r, s, c in rows if (r, s) == ("near", "ninco"))
    assert near == sorted((f, k) for k, files in NINCO_IMAGES.items() for f in files)
    far = {c: Path(p) for p, r, s, c in rows if (r, s) == ("far", "ninco_unit_tests")}
    assert sorted(far) == sorted(unit_tests.KINDS)  # one image of each of the 17
    assert {p.parent.parent for p in far.values()} == {out}
    ids = [Path(p).name for p, r, s, c in rows if r == "id"]
    assert sorted(ids) == sorted(p.name for p in val_dir.iterdir())  # all of val
    assert len(rows) == 3 + 17 + len(ids)
    assert ds.info["imagenetx"]["benchmark"] == "ninco"
    assert ds.count("ground_truth") == len(ids)  # OOD images have none
    assert ds.count_sample_tags()  # the ID images carry ImageNet-X's factor tags
    # the authors' picks: each generated name is the release's first of its kind
    sources = unit_test_val_files(1)
    for kind, path in far.items():
        item = unit_tests.UnitTestImage(kind, 0, int(unit_tests.source_indices(kind)[0]))
        assert path.name == item.file_name
        with Image.open(path) as im:  # the size of the val image it is made from
            assert im.size == (8, 8)
        assert sources[item.val_index] in ids
    # seeded: the same seed draws the same pixels, another seed others
    picture = np.asarray(Image.open(far["uni"]))
    source = np.zeros((8, 8, 3))
    assert (picture == unit_tests.draw("uni", source, 3, int(far["uni"].stem[-5:]))).all()
    assert (picture != unit_tests.draw("uni", source, 4, int(far["uni"].stem[-5:]))).any()


def test_ninco_without_imagenet_val_generates_224px_tests_without_the_permutations(
        ninco_dir, tmp_path):
    ds, summary = load_ninco(str(ninco_dir), unit_tests=2, unit_tests_dir=str(tmp_path),
                             name="ood-load-ninco-ood-only", overwrite=True)
    assert summary.by_role == {"near": 3, "far": 2 * 15} and "no ID images" in str(summary)
    classes = ds.match({SOURCE_FIELD: "ninco_unit_tests"}).distinct(CLASS_FIELD)
    assert set(classes) == set(unit_tests.KINDS) - set(unit_tests.PIXEL_KINDS)
    black = ds.match({CLASS_FIELD: "black"}).first().filepath
    with Image.open(black) as im:
        assert im.size == unit_tests.DEFAULT_SIZE and not np.asarray(im).any()


@pytest.mark.skipif(not (SHARED / "ninco").is_dir(), reason="shared NINCO lists absent")
def test_the_unit_tests_are_picked_from_the_val_images_the_authors_picked():
    """j-cb/NINCO's NINCO_OOD_unit_tests.csv names its 6,800 images by the
    val image each was made from: the seeded picks reproduce every name."""
    with open(SHARED / "ninco" / "NINCO_OOD_unit_tests.csv", newline="") as f:
        released = sorted(r["image_location"].split("/")[-1] for r in csv.DictReader(f))
    made = sorted(i.file_name for i in unit_tests.planned(unit_tests.PER_KIND))
    assert len(made) == 6800 and made == released


def test_each_unit_test_draws_its_pattern():
    image = np.random.default_rng(0).random((40, 60, 3))
    pics = {k: unit_tests.draw(k, image, 0, 7) for k in unit_tests.KINDS}
    assert all(p.shape == (40, 60, 3) and p.dtype == np.uint8 for p in pics.values())
    assert not pics["black"].any() and (pics["white"] == 255).all()
    assert set(np.unique(pics["Rademacher"])) == {0, 255}
    assert len(np.unique(pics["monochrome"].reshape(-1, 3), axis=0)) == 1
    grey = pics["grey"].reshape(-1, 3)
    assert (grey == grey[0, 0]).all()
    assert (pics["horizontal_stripes"] == pics["horizontal_stripes"][:, :1]).all()
    assert (pics["vertical_stripes"] == pics["vertical_stripes"][:1]).all()
    # a permutation keeps the image's pixels, in another order
    perm, orig = pics["pixel_perm"].reshape(-1, 3), (image * 255).astype(np.uint8).reshape(-1, 3)
    assert sorted(map(tuple, perm)) == sorted(map(tuple, orig)) and (perm != orig).any()
    assert pics["low_freq"].min() == 0 and pics["low_freq"].max() >= 254  # full range


def test_ninco_refuses_a_wrong_layout_in_one_line(tmp_path, ninco_dir):
    with pytest.raises(ImageNetXError) as e:
        load_ninco(str(tmp_path), unit_tests=0, name="ood-load-ninco-bad")
    assert "not in the NINCO release layout NINCO_OOD_classes/<class>/<image>" in _one_line(e)
    _jpeg(tmp_path / "NINCO_OOD_classes" / "goldfish" / "x.jpg")
    with pytest.raises(ImageNetXError) as e:
        load_ninco(str(tmp_path), unit_tests=0, name="ood-load-ninco-bad")
    assert "1 folder(s) that are not NINCO classes (goldfish)" in _one_line(e)
    with pytest.raises(ImageNetXError) as e:
        load_ninco(str(ninco_dir), unit_tests=401, name="ood-load-ninco-bad")
    assert "between 0 and 400" in _one_line(e)
    assert not fo.dataset_exists("ood-load-ninco-bad")


# -- OpenOOD v1.5 ImageNet-1K ----------------------------------------------------


def _openood(tmp_path: Path):
    """Lists of a few lines in OpenOOD's format (the ID lines real val
    images of the lists' labels) and a data folder with their images."""
    lists, data = tmp_path / "lists" / "imagenet", tmp_path / "data"
    id_files = [f for c in OTHER_CLASSES for f in _val_files_of(c, 1)]
    content = {
        "test_imagenet.txt": [(f"imagenet_1k/val/{f}", int(anno.class_of_file(f)))
                              for f in id_files],
        "test_ssb_hard.txt": [("ssb_hard/n11622368/n11622368_1063.JPEG", -1),
                              ("ssb_hard/n00000002/n00000002_7.JPEG", -1)],
        "test_ninco.txt": [("ninco/bagpipe/bagpipe_000.jpeg", -1)],
        "test_inaturalist.txt": [("inaturalist/images/98945524784c9c.jpg", -1)],
        "test_textures.txt": [("texture/banded/banded_0002.jpg", -1)],
        "test_openimage_o.txt": [("openimage_o/images/b85bd6c20e9c378a.jpg", -1),
                                 ("openimage_o/images/6989a0fc56bff34d.jpg", -1)],
    }
    lists.mkdir(parents=True)
    for name, lines in content.items():
        (lists / name).write_text("".join(f"{p} {label}\n" for p, label in lines))
        for k, (rel, _) in enumerate(lines):
            root = "images_classic" if rel.startswith("texture/") else "images_largescale"
            _jpeg(data / root / rel, k)
    return lists.parent, data, content


def test_openood_reads_each_set_from_the_folders_its_lists_name(tmp_path, val_dir):
    lists, data, content = _openood(tmp_path)
    ds, summary = load_openood_imagenet(str(data), lists_dir=str(lists),
                                        name="ood-load-openood", overwrite=True)
    assert summary.by_source == {"imagenet_val": 3, "ninco": 1, "ssb_hard": 2,
                                 "inaturalist": 1, "textures": 1, "openimage_o": 2}
    assert summary.by_role == {"id": 3, "near": 3, "far": 4}
    rows = _columns(ds, "filepath", ROLE_FIELD, SOURCE_FIELD, CLASS_FIELD, "ground_truth")
    got = {(p.split("/images_")[1].split("/", 1)[1], r, s, c) for p, r, s, c, _ in rows}
    assert ("ssb_hard/n11622368/n11622368_1063.JPEG", "near", "ssb_hard", "n11622368") in got
    assert ("texture/banded/banded_0002.jpg", "far", "textures", "banded") in got
    assert ("openimage_o/images/b85bd6c20e9c378a.jpg", "far", "openimage_o", None) in got
    labels = dict(content["test_imagenet.txt"])
    for p, r, s, c, gt in rows:
        if r == "id":
            assert gt.class_index == labels["imagenet_1k/val/" + Path(p).name]
        else:
            assert gt is None
    info = ds.info["imagenetx"]
    assert info["benchmark"] == "openood_imagenet" and info["ood"]["id_split"] == "test"
    sources = get_benchmark(ds).slicing(ds, FieldNames(), "ood_source")
    assert sources.values == ("imagenet_val", "ninco", "ssb_hard", "inaturalist", "textures",
                              "openimage_o")  # the contract's order
    # some sets only, the ID images from an ImageNet val folder
    ds, summary = load_openood_imagenet(str(data), sets="ninco", imagenet_dir=str(val_dir),
                                        lists_dir=str(lists), name="ood-load-openood",
                                        overwrite=True)
    assert summary.by_source == {"imagenet_val": 3, "ninco": 1}
    assert {Path(p).parent for p in ds.match({ROLE_FIELD: "id"}).values("filepath")} == {
        val_dir}


def test_openood_says_how_many_images_are_missing_from_which_set(tmp_path):
    lists, data, _ = _openood(tmp_path)
    (data / "images_largescale" / "ssb_hard" / "n00000002" / "n00000002_7.JPEG").unlink()
    for p in (data / "images_largescale" / "openimage_o" / "images").iterdir():
        p.unlink()
    with pytest.raises(ImageNetXError) as e:
        load_openood_imagenet(str(data), lists_dir=str(lists), name="ood-load-openood-bad")
    text = _one_line(e)
    assert "lacks 3 of the images OpenOOD's ImageNet-1K test lists name" in text
    assert "1 of 2 from ssb_hard (ssb_hard/n00000002/n00000002_7.JPEG)" in text
    assert "2 of 2 from openimage_o (openimage_o/images/" in text
    with pytest.raises(ImageNetXError) as e:
        load_openood_imagenet(str(tmp_path / "lists"), lists_dir=str(lists),
                              name="ood-load-openood-bad")
    assert "is not OpenOOD's data folder: expected images_largescale/" in _one_line(e)
    with pytest.raises(ImageNetXError) as e:
        load_openood_imagenet(str(data), sets="ssb_hard,places", lists_dir=str(lists),
                              name="ood-load-openood-bad")
    assert "no OOD set 'places'" in _one_line(e)
    assert not fo.dataset_exists("ood-load-openood-bad")


@pytest.mark.skipif(not LISTS.is_dir(), reason="shared OpenOOD lists absent")
def test_openood_real_lists_name_45000_id_images_and_each_sets_size(tmp_path, monkeypatch):
    """OpenOOD v1.5's own lists (through the override folder): a data folder
    holding none of their images says each set's size; the ID lists' labels
    are the official val labels."""
    monkeypatch.setenv("IMAGENETX_OPENOOD_DIR", str(LISTS))
    (tmp_path / "images_largescale" / "imagenet_1k" / "val").mkdir(parents=True)
    with pytest.raises(ImageNetXError) as e:
        load_openood_imagenet(str(tmp_path), name="ood-load-openood-real")
    text = _one_line(e)
    for count, source in (("45,000", "imagenet_val"), ("49,000", "ssb_hard"),
                          ("5,879", "ninco"), ("10,000", "inaturalist"),
                          ("5,160", "textures"), ("15,869", "openimage_o")):
        assert f"{count} of {count} from {source} (" in text
    from imagenetx.benchmarks.ood_detection import openood

    lines = [openood.read_lists(openood.SPLITS[split][:1])["imagenet_val"]
             for split in ("test", "val")]
    official = anno.val_labels()
    for rows in lines:
        labels = [official[anno.val_number(p.rsplit("/", 1)[1]) - 1] for p, _ in rows]
        assert labels == [label for _, label in rows]
    assert [len(rows) for rows in lines] == [45000, 5000]
    assert len({p for rows in lines for p, _ in rows}) == 50000  # test and val apart


def test_the_apps_load_form_offers_each_benchmarks_options():
    from test_loading import _choices, _form

    assert {"imagenet_o", "ninco", "openood_imagenet"} <= set(_choices(_form({})["benchmark"]))
    assert {"dir", "imagenet_dir", "unit_tests", "seed", "unit_tests_dir"} <= set(
        _form({"benchmark": "ninco"}))
    form = _form({"benchmark": "openood_imagenet"})
    assert _choices(form["split"]) == ["test", "val"] and {"sets", "lists_dir"} <= set(form)
