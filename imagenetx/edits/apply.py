"""Edits a dataset's images with object masks into a grouped dataset: the
original in the ``ori`` slice, each edit in its own slice of the same group.

A non-grouped source is copied into a grouped dataset (``<name>-edits`` by
default) and left as it was; a grouped one (with an ``ori`` slice) gets new
slices. The edited images are PNGs next to the media,
``<common folder of the images>/edits/<slice>/<path below it>.png``.
Nothing is added to a dataset before every requested edit has been
written, so a failing edit leaves every dataset as it was.
"""

import os
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Union

import cv2
import fiftyone as fo
import fiftyone.core.utils as fou
import numpy as np
from fiftyone import ViewField as F

from imagenetx.edits import operations as ops
from imagenetx.edits.masks import check_mask_field, label_mask, resolve_target
from imagenetx.benchmarks.imagenet_e.benchmark import ImageNetE
from imagenetx.edits.specs import ORIGINAL_EDIT, Edit, parse_edits
from imagenetx.errors import ImageNetXError
from imagenetx.store.datasets import check_new_dataset_name, get_dataset, replace_dataset

GROUP_FIELD = "group"
ORIGINAL_SLICE = "ori"
EDIT_FIELD = "edit"
LEVEL_FIELD = "edit_level"
DETAILS_FIELD = "edit_details"
#: source samples read and edited per round (masks are held for a round)
CHUNK = 64

#: ``kind -> fn(image, mask, edit, rng, background, clean) -> Edited``;
#: ``clean`` is the image with its object inpainted away (one fill per
#: image, shared by its edits), ``background`` the background edit's image
Operation = Callable[..., ops.Edited]
OPERATIONS: Dict[str, Operation] = {
    "size": lambda im, m, e, rng, bg, clean: ops.resize_object(im, m, e.value, clean=clean),
    "position": lambda im, m, e, rng, bg, clean: ops.move_object(im, m, rng, clean=clean),
    "direction": lambda im, m, e, rng, bg, clean: ops.rotate_object(im, m, e.value,
                                                                    clean=clean),
    "background": lambda im, m, e, rng, bg, clean: ops.replace_background(im, m, bg),
}
#: the kinds that start from the inpainted image
NEEDS_CLEAN = {"size", "position", "direction"}


@dataclass
class EditSummary:
    """What :func:`edit_dataset` did.

    Attributes:
        dataset: the grouped dataset the edits went into
        source: the dataset edited
        copied: whether ``dataset`` is a new grouped copy of ``source``
        originals: the source samples considered
        added: ``{slice: samples added}``
        already: (sample, edit) pairs skipped because the group had the slice
        no_mask: source samples without the object mask (not edited)
        unreadable: source images that could not be read (not edited)
        failed: ``(file, slice, reason)`` of edits left out (``skip_failed``)
        out_dir: where the edited images were written
        seconds: wall time
    """

    dataset: str
    source: str
    copied: bool = False
    originals: int = 0
    added: Dict[str, int] = field(default_factory=dict)
    already: int = 0
    no_mask: int = 0
    unreadable: int = 0
    failed: List[tuple] = field(default_factory=list)
    out_dir: str = ""
    seconds: float = 0.0

    def __str__(self) -> str:
        total = sum(self.added.values())
        how = f"a grouped copy of '{self.source}'" if self.copied else "grouped"
        lines = [f"Dataset '{self.dataset}' ({how}): {total:,} edited samples "
                 f"added from {self.originals:,} originals in {self.seconds:.1f} s"]
        lines += [f"  {s}: {n:,}" for s, n in self.added.items()]
        for what, n in (("already edited (kept)", self.already),
                        ("without an object mask (skipped)", self.no_mask),
                        ("unreadable images (skipped)", self.unreadable),
                        ("edits that failed (skipped)", len(self.failed))):
            if n:
                lines.append(f"  {what}: {n:,}")
        for path, slice_, reason in self.failed[:5]:
            lines.append(f"    {os.path.basename(path)} {slice_}: {reason}")
        if self.out_dir:
            lines.append(f"  images in {self.out_dir}")
        return "\n".join(lines)


@dataclass
class _Image:
    """A source image read for editing: its status (``ok``, ``no_mask``,
    ``unreadable``), pixels, object mask and clean plate (its object
    inpainted away)."""

    status: str
    image: Optional[np.ndarray] = None
    mask: Optional[np.ndarray] = None
    clean: Optional[np.ndarray] = None


def edit_dataset(
    samples,
    mask_field: str,
    edits: Sequence[Union[str, Edit]],
    seed: int = 0,
    name: Optional[str] = None,
    object_label: Union[str, int, None] = None,
    out_dir: Optional[str] = None,
    inpaint: str = "telea",
    skip_failed: bool = False,
    overwrite: bool = False,
    workers: Optional[int] = None,
    operations: Optional[Dict[str, Operation]] = None,
    gt_field: str = "ground_truth",
    progress=None,
):
    """Edits the objects of a dataset's images and adds the edits as group
    slices of their originals.

    Every sample gets ``edit`` (``original``, ``size``, ``position``,
    ``direction`` or ``background``), ``edit_level`` (None on the originals)
    and, on the edits, ``edit_details`` (what the edit did: the reached
    ratio, the shift, the angle, the background's file). The edits carry the
    source's tags, ground truth and fields that are not labels (e.g.
    ``imagenetx``); other label fields (predictions, boxes, masks) and
    their evaluations describe the unedited image and are not carried.

    Args:
        samples: a dataset, view or name; of a grouped dataset, the samples
            of its ``ori`` slice are edited
        mask_field: a ``fo.Segmentation`` field, or a ``fo.Detection(s)``
            field with instance masks
        edits: edit specs (``"size:0.1,0.08"``, ``"position"``,
            ``"direction:90"``, ``"background:random"``, see
            :mod:`imagenetx.edits.specs`) or :class:`Edit` objects
        seed (0): the seed; each image's edit draws from a generator seeded
            by it, the image's file name and the slice, so an edit is the
            same whatever else is edited
        name (None): the grouped copy of a non-grouped dataset (default
            ``<name>-edits``); a later run with the same name adds to it
        object_label (None): which object: a segmentation's pixel value or
            mask-target label (None: all non-zero pixels), or a detection
            label (None: the largest box)
        out_dir (None): where to write the images (default: ``edits/``
            in the images' common folder)
        inpaint ("telea"): ``"telea"`` or ``"ns"`` (OpenCV's inpainting)
        skip_failed (False): leave out an edit an image does not allow
            (e.g. a size its object cannot reach) instead of failing
        overwrite (False): replace an existing dataset called ``name`` that
            is not an edited copy of this one
        workers (None): threads editing images (default: CPU cores, max 8)
        operations (None): ``{kind: fn}`` implementations for kinds
            registered with :func:`imagenetx.edits.register_edit_kind`
        gt_field ("ground_truth"): the label field the edits carry; no
            other label field is carried
        progress (None): a progress bar (True/False), the FiftyOne default
            (None), or a callback receiving a ``fiftyone.core.utils.ProgressBar``

    Returns:
        ``(grouped dataset, EditSummary)``

    Raises:
        ImageNetXError: before anything is written for a bad option, edit,
            mask field or name; and for an edit an image does not allow
            (unless ``skip_failed``), after removing the images written
    """
    start = time.perf_counter()
    plan = _plan(samples, mask_field, edits, seed, name, object_label, out_dir, inpaint,
                 overwrite, operations)
    summary = EditSummary(dataset=plan.target_name, source=plan.source.name,
                          copied=plan.copied, originals=len(plan.ids),
                          already=plan.already, out_dir=plan.out.root)
    records = _edit_images(_ImageEditor(plan), plan, workers or min(8, os.cpu_count() or 1),
                           skip_failed, progress, summary)
    target = plan.target
    if target is None:
        target = _grouped_copy(plan.originals, plan.target_name, plan.groups, overwrite)
    _add_edits(target, plan.originals, plan.ids, plan.groups, records, mask_field, gt_field,
               summary)
    _record(target, plan.source, mask_field, seed, plan.edits, plan.copied)
    summary.seconds = time.perf_counter() - start
    return target, summary


@dataclass
class _OutPaths:
    """Where the edited images go: ``<root>/<slice>/<path below base>.png``."""

    root: str
    base: str

    @classmethod
    def of(cls, paths: Sequence[str], out_dir: Optional[str]) -> "_OutPaths":
        """``out_dir`` (default: ``edits/`` in the images' common folder),
        each image's path taken below that common folder."""
        common = _common_dir(paths)
        return cls(out_dir or os.path.join(common, "edits"), common)

    def __call__(self, path: str, edit: Edit) -> str:
        rel = os.path.relpath(path, self.base) if path.startswith(self.base + os.sep) \
            else os.path.basename(path)
        return os.path.join(self.root, edit.slice, os.path.splitext(rel)[0] + ".png")


@dataclass
class _Plan:
    """What an :func:`edit_dataset` run edits, settled (and checked) before
    any image is read.

    Attributes:
        source: the dataset edited
        originals: its samples to edit (of a grouped target: its ``ori`` slice)
        target: the grouped dataset the edits go into (None: a copy still
            to be made, called ``target_name``)
        target_name: the grouped dataset's name
        copied: whether the target is a grouped copy of ``source``
        edits: the edits asked for
        operations: ``{kind: fn}`` of every kind asked for
        ids, paths, groups: per original, its id, file and group
        need: ``{position: edits its group does not have yet}``
        mask_field, target_value, mask_targets: where each object mask is
        inpaint, seed: the inpainting method and the seed
        out: where the edited images go
        textures: ``{file: image}`` of the texture backgrounds
    """

    source: fo.Dataset
    originals: object
    target: Optional[fo.Dataset]
    target_name: str
    copied: bool
    edits: List[Edit]
    operations: Dict[str, Operation]
    ids: List[str]
    paths: List[str]
    groups: list
    need: Dict[int, List[Edit]]
    mask_field: str
    target_value: object
    mask_targets: Optional[dict]
    inpaint: str
    seed: int
    out: _OutPaths
    textures: Dict[str, np.ndarray]

    @property
    def already(self) -> int:
        """(sample, edit) pairs whose group already has the slice."""
        return sum(len(self.edits) - len(n) for n in self.need.values())


def _plan(samples, mask_field, edits, seed, name, object_label, out_dir, inpaint,
          overwrite, operations) -> _Plan:
    """Checks the options, the edits, the mask field and the target name,
    and settles what each original still needs."""
    samples = get_dataset(samples)
    source = samples._dataset
    edits = parse_edits(edits)
    run = {**OPERATIONS, **(operations or {})}
    missing = [e.kind for e in edits if e.kind not in run]
    if missing:
        raise ImageNetXError(
            f"No operation for edit kind '{missing[0]}': pass one in `operations`")
    ops._inpaint_flag(inpaint)

    target, originals, copied = _target(samples, name, overwrite)
    mask_type = check_mask_field(originals, mask_field)
    mask_targets = _mask_targets(originals, mask_field)
    target_value = resolve_target(mask_type, object_label, mask_targets)

    ids, paths = originals.values(["id", "filepath"])
    groups = (originals.values(GROUP_FIELD) if target is not None
              else [fo.Group() for _ in ids])
    if any(_random_background(e) for e in edits) and len(ids) < 2:
        raise ImageNetXError(
            "background:random takes the background of another sample: edit "
            "at least 2 samples, or give a texture image")
    done = _done(target, edits)
    need = {i: [e for e in edits if e.slice not in done or groups[i].id not in done[e.slice]]
            for i in range(len(ids))}
    textures = {e.value: cv2.imread(e.value, cv2.IMREAD_COLOR) for e in edits
                if e.kind == "background" and e.level != "random"}
    return _Plan(
        source=source, originals=originals, target=target,
        target_name=target.name if target is not None else name or f"{source.name}-edits",
        copied=copied, edits=edits, operations=run, ids=ids, paths=paths, groups=groups,
        need=need, mask_field=mask_field, target_value=target_value,
        mask_targets=mask_targets, inpaint=inpaint, seed=seed,
        out=_OutPaths.of(paths, out_dir), textures=textures)


@dataclass
class _ImageEditor:
    """Reads, then edits, one original of a :class:`_Plan` at a time (run
    in threads)."""

    plan: _Plan

    def prepare(self, i: int, label, clean_needed: bool) -> _Image:
        """Reads an image and its mask, and inpaints its object if asked."""
        plan = self.plan
        image = cv2.imread(plan.paths[i], cv2.IMREAD_COLOR)
        if image is None:
            return _Image("unreadable")
        mask = label_mask(label, image.shape, plan.target_value, plan.mask_targets)
        if mask is None or not mask.any():
            return _Image("no_mask", image)
        clean = ops.clean_plate(image, mask, plan.inpaint) if clean_needed else None
        return _Image("ok", image, mask, clean)

    def edit(self, i: int, own: _Image, partner: Optional[int], other: Optional[_Image]):
        """Edits one image and writes its edits: ``(records, failures, status)``."""
        if own.status != "ok":
            return [], [], own.status
        plan = self.plan
        path = plan.paths[i]
        records, failures = [], []
        for edit in plan.need[i]:
            rng = _rng(plan.seed, path, edit.slice)
            try:
                background, extra = None, {}
                if edit.kind == "background":
                    background, extra = _background(edit, plan.textures, plan.paths,
                                                    partner, other)
                edited = plan.operations[edit.kind](own.image, own.mask, edit, rng,
                                                    background, own.clean)
            except ImageNetXError as e:
                failures.append((path, edit.slice, str(e)))
                continue
            dest = plan.out(path, edit)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if not cv2.imwrite(dest, edited.image):
                raise ImageNetXError(f"Could not write {dest}: check the folder's "
                                     "permissions or pass another `out_dir`")
            records.append((i, edit, dest, {**edited.details, **extra}))
        return records, failures, "ok"


def _edit_images(editor: _ImageEditor, plan: _Plan, workers: int, skip_failed: bool,
                 progress, summary: EditSummary) -> List[tuple]:
    """Edits the originals round by round (:func:`_chunks`) in ``workers``
    threads, counting into ``summary``; on any failure (an edit an image
    does not allow, unless ``skip_failed``) removes the images written.

    Returns:
        ``(position, edit, file, details)`` per edited image
    """
    need = plan.need
    records: List[tuple] = []
    try:
        with fou.ProgressBar(total=sum(1 for n in need.values() if n),
                             progress=progress) as pb, \
                ThreadPoolExecutor(max_workers=workers) as pool:
            for chunk in _chunks(len(plan.ids), plan.seed):
                members = [i for i in chunk if need[i]]
                if not members:
                    continue
                partners = {i: _partner(i, chunk, plan.seed, plan.paths) for i in members
                            if any(_random_background(e) for e in need[i])}
                wanted = sorted(set(members) | set(partners.values()))
                labels = plan.originals.select([plan.ids[i] for i in wanted], ordered=True) \
                    .values(plan.mask_field)
                cleans = [i in partners.values() or any(e.kind in NEEDS_CLEAN
                                                        for e in need[i])
                          for i in wanted]
                ready = dict(zip(wanted, pool.map(editor.prepare, wanted, labels, cleans)))
                partner_of = [partners.get(i) for i in members]
                for recs, fails, status in pool.map(
                        editor.edit, members, [ready[i] for i in members], partner_of,
                        [ready.get(p) for p in partner_of]):
                    records += recs
                    summary.failed += fails
                    summary.no_mask += status == "no_mask"
                    summary.unreadable += status == "unreadable"
                    pb.update()
                if summary.failed and not skip_failed:
                    path, slice_, reason = summary.failed[0]
                    raise ImageNetXError(
                        f"Edit {slice_} of {path}: {reason}. Nothing was added; "
                        "pass `skip_failed=True` to leave such edits out")
    except BaseException:
        for _, _, path, _ in records:
            if os.path.exists(path):
                os.remove(path)
        raise
    return records


def _target(samples, name, overwrite):
    """``(grouped dataset or None when it is still to be made, the original
    samples, whether the target is a copy)``."""
    source = samples._dataset
    if samples.media_type == fo.core.media.GROUP:
        if name and name != source.name:
            raise ImageNetXError(
                f"Dataset '{source.name}' is grouped: its edits are added as "
                "slices of it, leave out `name`")
        if ORIGINAL_SLICE not in source.group_slices:
            raise ImageNetXError(
                f"Grouped dataset '{source.name}' has no '{ORIGINAL_SLICE}' "
                f"slice holding the originals: its slices are "
                f"{', '.join(source.group_slices)}")
        return source, samples.select_group_slices(ORIGINAL_SLICE), False
    name = name or f"{source.name}-edits"
    if name == source.name:
        raise ImageNetXError(
            f"`name='{name}'` is the source dataset: the grouped copy needs "
            "another name")
    if fo.dataset_exists(name):
        existing = fo.load_dataset(name)
        ours = (existing.media_type == fo.core.media.GROUP
                and (existing.info.get("imagenetx_edits") or {}).get("source")
                == source.name)
        if ours and not overwrite:
            paths = samples.values("filepath")
            view = existing.select_group_slices(ORIGINAL_SLICE).match(
                F("filepath").is_in(paths))
            return existing, view, True
        check_new_dataset_name(name, overwrite)
    return None, samples, True


def _mask_targets(samples, mask_field):
    dataset = samples._dataset
    return dataset.mask_targets.get(mask_field) or dataset.default_mask_targets or None


def _done(target, edits) -> Dict[str, set]:
    """``{slice: group ids that have it}`` of the edits' slices."""
    if target is None:
        return {}
    have = set(target.group_slices)
    return {e.slice: set(target.select_group_slices(e.slice).values(f"{GROUP_FIELD}.id"))
            for e in edits if e.slice in have}


def _rng(seed: int, path: str, slice_: str) -> np.random.Generator:
    """The generator of one image's edit: the seed, the file name, the slice."""
    return np.random.default_rng(
        [seed, zlib.crc32(os.path.basename(path).encode()), zlib.crc32(slice_.encode())])


def _chunks(n: int, seed: int) -> List[List[int]]:
    """The sample positions in a seeded random order, cut into rounds of
    :data:`CHUNK` (a last round of one joins the one before, so that every
    image has another to take a background from)."""
    order = np.random.default_rng(seed).permutation(n).tolist()
    chunks = [order[lo:lo + CHUNK] for lo in range(0, n, CHUNK)]
    if len(chunks) > 1 and len(chunks[-1]) == 1:
        chunks[-2] += chunks.pop()
    return chunks


def _random_background(edit: Edit) -> bool:
    return edit.kind == "background" and edit.level == "random"


def _partner(i: int, chunk: List[int], seed: int, paths) -> int:
    """The other image whose background ``background:random`` takes: drawn
    by the image's generator among the others of its round (a random
    sample of the dataset), so its inpainted background is computed once
    for the round."""
    rng = _rng(seed, paths[i], "background_random")
    others = [k for k in chunk if k != i]
    return others[int(rng.integers(0, len(others)))]


def _background(edit, textures, paths, partner, other) -> tuple:
    """The background image of a background edit and what to record of it:
    a texture, or the other image with its object inpainted away (as it is
    when it has no mask)."""
    if edit.level != "random":
        return textures[edit.value], {"background": edit.value}
    if other.status == "unreadable":
        raise ImageNetXError(f"the background image {paths[partner]} cannot be read")
    image = other.clean if other.clean is not None else other.image
    return image, {"background": paths[partner]}


def _common_dir(paths) -> str:
    dirs = {os.path.dirname(os.path.abspath(p)) for p in paths}
    return os.path.commonpath(sorted(dirs)) if dirs else os.getcwd()


def _copied_fields(originals, mask_field, gt_field) -> List[str]:
    """The source fields an edit carries: the ground truth and every field
    that is not a label (e.g. ``imagenetx``); other labels (predictions,
    boxes, masks) and their evaluations describe the unedited image."""
    dataset = originals._dataset
    schema = originals.get_field_schema()
    labels = [f for f, ftype in schema.items() if f != gt_field and isinstance(
        getattr(ftype, "document_type", None), type)
        and issubclass(ftype.document_type, fo.Label)]
    skip = {"id", "filepath", "tags", "metadata", "created_at", "last_modified_at",
            GROUP_FIELD, mask_field, EDIT_FIELD, LEVEL_FIELD, DETAILS_FIELD,
            *labels, *dataset.list_evaluations()}
    return [f for f in schema if f not in skip and not f.startswith("_")]


def _grouped_copy(originals, name, groups, overwrite) -> fo.Dataset:
    """A grouped dataset whose ``ori`` slice is a copy of the originals."""
    if fo.dataset_exists(name):
        check_new_dataset_name(name, overwrite)
        replace_dataset(name)
    dataset = fo.Dataset(name)
    dataset.persistent = True
    dataset.add_group_field(GROUP_FIELD, default=ORIGINAL_SLICE)
    tmp = originals.clone()
    try:
        tmp.set_values(GROUP_FIELD, [g.element(ORIGINAL_SLICE) for g in groups])
        tmp.set_values(EDIT_FIELD, [ORIGINAL_EDIT] * len(groups))
        if not tmp.has_field(LEVEL_FIELD):
            tmp.add_sample_field(LEVEL_FIELD, fo.StringField)
        dataset.add_collection(tmp)
    finally:
        tmp.delete()
    return dataset


def _add_edits(target, originals, ids, groups, records, mask_field, gt_field, summary):
    """Adds the edited samples in one bulk call, carrying the source's
    fields and tags."""
    if not records:
        return
    names = _copied_fields(originals, mask_field, gt_field)
    wanted = sorted({r[0] for r in records})
    columns = originals.select([ids[i] for i in wanted], ordered=True).values(
        ["tags", *names])
    carried = {i: [col[k] for col in columns] for k, i in enumerate(wanted)}
    new = []
    for index, edit, path, details in sorted(records, key=lambda r: (r[0], r[1].slice)):
        tags, *values = carried[index]
        fields = {n: _copy(v) for n, v in zip(names, values) if v is not None}
        new.append(fo.Sample(
            filepath=path, tags=list(tags or []),
            **{GROUP_FIELD: groups[index].element(edit.slice), EDIT_FIELD: edit.edit,
               LEVEL_FIELD: edit.level, DETAILS_FIELD: details}, **fields))
        summary.added[edit.slice] = summary.added.get(edit.slice, 0) + 1
    originals_view = target.select_group_slices(ORIGINAL_SLICE)
    unset = originals_view.exists(EDIT_FIELD, False)
    if len(unset):
        unset.set_values(EDIT_FIELD, [ORIGINAL_EDIT] * len(unset))
    target.add_samples(new, progress=False)


def _copy(value):
    return value.copy() if hasattr(value, "copy") else value


def _record(target, source, mask_field, seed, edits, copied) -> None:
    """Notes in the dataset's info where its edits came from."""
    info = dict(target.info)
    notes = dict(info.get("imagenetx_edits") or {})
    if copied:
        notes["source"] = source.name
    notes["mask_field"] = mask_field
    slices = dict(notes.get("slices") or {})
    for e in edits:
        slices[e.slice] = {"edit": e.edit, "level": e.level, "seed": seed}
    notes["slices"] = slices
    info["imagenetx_edits"] = notes
    imagenetx = dict(info.get("imagenetx") or {})
    imagenetx.setdefault("benchmark", "imagenet_e")
    if copied:
        imagenetx["benchmark"] = "imagenet_e"
    info["imagenetx"] = imagenetx
    target.info = info
    target.save()
    ImageNetE().tagged(target)
