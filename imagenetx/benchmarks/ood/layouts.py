"""The release folder layouts of the ImageNet OOD benchmarks, one table.

Each :class:`Layout` says how a release names its class folders and which
folder levels above them become slicing fields:

=============== ===================================== =====================
benchmark       folders                               slicing fields
=============== ===================================== =====================
ImageNet-A      ``<wnid>/<image>`` (200 classes)      (class)
ImageNet-R      ``<wnid>/<image>`` (200 classes)      (class)
ImageNet-Sketch ``<wnid>/<image>`` (1000 classes)     (class)
ImageNetV2      ``[<variant folder>/]<0..999>/<image>`` ``variant``
ImageNet-C      ``[<group>/]<corruption>/<severity>/<wnid>/<image>``
                                                      ``corruption``,
                                                      ``severity``
ImageNet-C-bar  ``<corruption>/<severity>/<wnid>/<image>``
                (severity: 1..5 or the parameter      ``corruption``,
                value, ``0.80``; :data:`CBAR_PARAMS`) ``severity``
ImageNet-3DCC   ``<corruption>/<severity 1..5>/<wnid>/<image>``
                (:data:`CORRUPTIONS_3DCC`)            ``corruption``,
                                                      ``severity``
ObjectNet       ``[objectnet-1.0/]images/<folder>/<image>.png``
                (the 113 of its 313 class folders     (class)
                that overlap ImageNet; the others
                are skipped)
=============== ===================================== =====================

:func:`find_images` walks a folder in one layout and returns the images
with their class and slicing values, or raises one error naming the
folder, what was expected and, when the folder fits another layout, which
option to use instead.

The table imports nothing heavy (the class tables load inside the
functions that need them): the command line builds its options from it.
"""

import operator
import os
import re
from dataclasses import dataclass
from typing import Dict, List, NamedTuple, Optional, Tuple

from imagenetx.errors import ImageNetXError
from imagenetx.options import V2_VARIANTS

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")

#: the 15 ImageNet-C corruptions, then the 4 extra ones of the release
CORRUPTIONS = (
    "gaussian_noise", "shot_noise", "impulse_noise",
    "defocus_blur", "glass_blur", "motion_blur", "zoom_blur",
    "snow", "frost", "fog", "brightness",
    "contrast", "elastic_transform", "pixelate", "jpeg_compression",
    "speckle_noise", "gaussian_blur", "spatter", "saturate",
)
SEVERITIES = (1, 2, 3, 4, 5)
#: ImageNet-C-bar's 10 corruptions (Mintun et al., NeurIPS 2021), in
#: Gavrikov's ``eval_imagenet_cbar.py`` order, with the parameter of each
#: severity 1..5 (facebookresearch/augmentation-corruption
#: ``imagenet_c_bar/imagenet_c_bar.csv``): the release's
#: ``make_imagenet_c_bar.py`` names each severity folder by its parameter,
#: ``"{:.2f}"`` (``blue_noise_sample/0.80/``)
CBAR_PARAMS: Dict[str, Tuple[float, ...]] = {
    "blue_noise_sample": (0.8, 1.6, 2.4, 4.0, 5.6),
    "brownish_noise": (1.0, 2.0, 3.0, 4.0, 5.0),
    "caustic_refraction": (2.35, 3.2, 4.9, 6.6, 9.15),
    "checkerboard_cutout": (2.0, 3.0, 4.0, 5.0, 6.0),
    "cocentric_sine_waves": (3.0, 5.0, 8.0, 9.0, 10.0),
    "inverse_sparkles": (1.0, 2.0, 4.0, 9.0, 10.0),
    "perlin_noise": (4.6, 5.2, 5.8, 7.6, 8.8),
    "plasma_noise": (4.75, 7.0, 8.5, 9.25, 10.0),
    "single_frequency_greyscale": (1.0, 1.5, 2.0, 4.5, 5.0),
    "sparkles": (1.0, 2.0, 3.0, 5.0, 6.0),
}
CBAR_CORRUPTIONS = tuple(CBAR_PARAMS)
#: ImageNet-3DCC's 12 corruptions (Kar et al., CVPR 2022), in RobustBench's
#: ``CORRUPTIONS_3DCC`` order (``robustbench/data.py``), scored as its
#: ``corruptions_3d`` threat model: the mean accuracy over the 12 x 5 cells
CORRUPTIONS_3DCC = ('near_focus', 'far_focus', 'bit_error', 'color_quant',
                    'flash', 'fog_3d', 'h265_abr', 'h265_crf', 'iso_noise',
                    'low_light', 'xy_motion_blur', 'z_motion_blur')
#: the pixels of ObjectNet's frame, cut from every side of its images before
#: the model's resize (the authors' ``objectnet_pytorch_dataloader.py``:
#: "crop out red border"; the testbed's ``crop_image(image, border=2)``)
OBJECTNET_BORDER = 2
#: why an ObjectNet dataset refuses to be tuned on
OBJECTNET_LICENCE = ("ObjectNet's licence forbids training or tuning on its images "
                     "(objectnet.dev): it is a test set only")
#: the folders the ImageNet-C tar files unpack into, around the corruptions
CORRUPTION_GROUPS = ("noise", "blur", "weather", "digital", "extra")

#: the release folder names that say ImageNetV2's variants
_V2_PATTERNS = (
    (re.compile(r"matched[-_]?frequency", re.I), "matched-frequency"),
    (re.compile(r"threshold[-_]?0?\.?7", re.I), "threshold-0.7"),
    (re.compile(r"top[-_]?images", re.I), "top-images"),
)

_WNID = re.compile(r"^n\d{8}$")
_NAME = operator.attrgetter("name")


@dataclass(frozen=True)
class Layout:
    """One benchmark's release layout.

    Attributes:
        kind: its short name (``a``, ``r``, ``sketch``, ``v2``, ``c``)
        benchmark: the benchmark name in ``dataset.info`` (``imagenet_a``)
        title: the display name
        folders: the folders under the release root, for messages
        default_name: the dataset name when none is given
        subset: the class subset its models are scored on, or None (1000)
        fields: the slicing fields its folders give each sample
        column: its accuracy column in the table that publishes it:
            Gavrikov & Keuper's ``benchmark.csv`` (``top1_acc/...``),
            RobustBench's leaderboard (``corruptions_acc_3d``); "" for none
        corruptions: the corruption folders it reads (ImageNet-C, -C-bar)
        keeps_geometry: its images are already the model's 224 x 224 input
            and are fed as they are, without the model's resize and crop
            (as the authors and Gavrikov's ``resize_crop=False`` do)
        border_crop: pixels cut from every side of each image before the
            model's own preprocessing (ObjectNet's frame: 2)
        no_tuning: why nothing may be trained or tuned on it (a licence),
            else ""
    """

    kind: str
    benchmark: str
    title: str
    folders: str
    default_name: str
    subset: Optional[str] = None
    fields: Tuple[str, ...] = ()
    column: str = ""
    corruptions: Tuple[str, ...] = ()
    keeps_geometry: bool = False
    border_crop: int = 0
    no_tuning: str = ""

    @property
    def classes(self) -> Tuple[int, ...]:
        """The ImageNet-1k indices of its classes (ObjectNet: the 125 its
        113 classes map to)."""
        from imagenetx.classes.imagenet import NUM_CLASSES  # lazy: start-up
        from imagenetx.classes.ood import objectnet_indices, subset_indices  # lazy: start-up

        if self.subset == "objectnet":
            return objectnet_indices()
        return subset_indices(self.subset) if self.subset else tuple(range(NUM_CLASSES))


LAYOUTS: Dict[str, Layout] = {lay.kind: lay for lay in (
    Layout("a", "imagenet_a", "ImageNet-A", "<wnid>/<image>",
           "imagenet-a", subset="imagenet_a", column="top1_acc/imagenet-a"),
    Layout("r", "imagenet_r", "ImageNet-R", "<wnid>/<image>",
           "imagenet-r", subset="imagenet_r", column="top1_acc/imagenet-r"),
    Layout("sketch", "imagenet_sketch", "ImageNet-Sketch",
           "<wnid>/<image>", "imagenet-sketch", column="top1_acc/imagenet-sketch"),
    Layout("v2", "imagenet_v2", "ImageNetV2",
           "[<variant folder>/]<class index 0..999>/<image>", "imagenet-v2",
           fields=("variant",), column="top1_acc/imagenet-v2"),
    Layout("c", "imagenet_c", "ImageNet-C",
           "[<group>/]<corruption>/<severity 1..5>/<wnid>/<image>", "imagenet-c",
           fields=("corruption", "severity"), column="top1_acc/imagenet-c",
           corruptions=CORRUPTIONS, keeps_geometry=True),
    Layout("cbar", "imagenet_cbar", "ImageNet-C-bar",
           "<corruption>/<severity 1..5 or parameter>/<wnid>/<image>", "imagenet-cbar",
           fields=("corruption", "severity"), column="top1_acc/imagenet-cbar",
           corruptions=CBAR_CORRUPTIONS, keeps_geometry=True),
    Layout("3dcc", "imagenet_3dcc", "ImageNet-3DCC",
           "<corruption>/<severity 1..5>/<wnid>/<image>", "imagenet-3dcc",
           fields=("corruption", "severity"), column="corruptions_acc_3d",
           corruptions=CORRUPTIONS_3DCC, keeps_geometry=True),
    Layout("objectnet", "objectnet", "ObjectNet",
           "[objectnet-1.0/]images/<ObjectNet class folder>/<image>.png", "objectnet",
           subset="objectnet", border_crop=OBJECTNET_BORDER,
           no_tuning=OBJECTNET_LICENCE),
)}


def get_layout(kind: str) -> Layout:
    """The layout of a kind (``a``, ``r``, ``sketch``, ``v2``, ``c``,
    ``cbar``) or a benchmark name (``imagenet_a``).

    Raises:
        ImageNetXError: for another name
    """
    for layout in LAYOUTS.values():
        if kind in (layout.kind, layout.benchmark):
            return layout
    raise ImageNetXError(
        f"Unknown OOD benchmark '{kind}': use one of {', '.join(LAYOUTS)}")


class Image(NamedTuple):
    """One image found: its path, ImageNet-1k class and slicing values (a
    tuple: a million of them are made in a few hundred ms)."""

    path: str
    class_index: int
    values: Tuple = ()


def _entries(folder: str):
    with os.scandir(folder) as entries:
        return sorted((e for e in entries if e.name[:1] != "."), key=_NAME)


def _subdirs(folder: str) -> List[str]:
    return [e.name for e in _entries(folder) if e.is_dir()]


def _images(folder: str) -> List[str]:
    return [e.path for e in _entries(folder)
            if e.name.lower().endswith(IMAGE_EXTENSIONS) and e.is_file()]


def v2_variant(name: str) -> Optional[str]:
    """The ImageNetV2 variant a folder name says
    (``imagenetv2-matched-frequency-format-val`` -> ``matched-frequency``)."""
    for pattern, variant in _V2_PATTERNS:
        if pattern.search(name):
            return variant
    return None


def _wnid_index() -> Dict[str, int]:
    from imagenetx.classes.imagenet import class_table  # lazy: start-up

    return {w: i for i, w in enumerate(class_table().wnids)}


def _class_index_of(name: str) -> Optional[int]:
    """The class index a folder name ``0``..``999`` says, else None."""
    from imagenetx.classes.imagenet import NUM_CLASSES  # lazy: start-up

    if name.isdigit() and str(int(name)) == name and int(name) < NUM_CLASSES:
        return int(name)
    return None


def _looks_like(folder: str) -> Tuple[Layout, ...]:
    """Which benchmarks' layout a folder (or its one child) seems to fit,
    for the hint of an error."""
    for root in (folder, *[os.path.join(folder, d) for d in _subdirs(folder)[:3]]):
        names = _subdirs(root)
        if not names:
            continue
        if any(n in CORRUPTIONS or n in CORRUPTION_GROUPS for n in names):
            return (LAYOUTS["c"],)
        if any(n in CBAR_PARAMS for n in names):
            return (LAYOUTS["cbar"],)
        if any(n in CORRUPTIONS_3DCC for n in names):
            return (LAYOUTS["3dcc"],)
        if "images" in names or any(n in _objectnet_folders() for n in names):
            return (LAYOUTS["objectnet"],)
        if any(v2_variant(n) for n in names) or all(_class_index_of(n) is not None for n in names):
            return (LAYOUTS["v2"],)
        if all(_WNID.match(n) for n in names):
            return tuple(lay for lay in LAYOUTS.values() if lay.folders == "<wnid>/<image>")
    return ()


def _no_layout(layout: Layout, folder: str, found: str) -> ImageNetXError:
    hint = _looks_like(folder)
    if hint and layout not in hint:
        fix = ("it fits another benchmark's layout: load it as "
               + " or ".join(lay.title for lay in hint) + " instead")
    else:
        fix = f"pass {layout.title}'s release folder"
    return ImageNetXError(
        f"Folder '{folder}' is not in the {layout.title} release layout "
        f"{layout.folders} ({found}): {fix}")


def unknown_folders_error(root: str, unknown: List[str], kind: str, listed: str,
                          folders: str) -> ImageNetXError:
    """The one line for class folders a release does not have.

    Args:
        root: the folder holding them
        unknown: their names
        kind: what they are not, e.g. ``"ObjectNet classes"``
        listed: what the release's class folders are, e.g. ``"wnids"``
        folders: the release's layout
    """
    shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
    return ImageNetXError(
        f"Folder '{root}' has {len(unknown)} folder(s) that are not {kind} ({shown}): "
        f"its class folders are {listed}, laid out as {folders}; remove or rename "
        "those folders")


def _class_folders(layout: Layout, folder: str, parse, what: str) -> List[Tuple[str, int]]:
    """``(path, class index)`` of the class folders of ``folder``.

    Raises:
        ImageNetXError: for folders that are not classes of the benchmark
    """
    allowed = set(layout.classes)
    out, unknown = [], []
    for name in _subdirs(folder):
        index = parse(name)
        if index is None or index not in allowed:
            unknown.append(name)
        else:
            out.append((os.path.join(folder, name), index))
    if unknown:
        raise unknown_folders_error(folder, unknown, f"{layout.title} classes", what,
                                    layout.folders)
    return out


def _wnid_root(layout: Layout, folder: str) -> str:
    """The folder holding the class folders: ``folder`` or its one child
    (archives unpack into ``imagenet-a/``, ``sketch/``, ...)."""
    names = _subdirs(folder)
    if names and any(_WNID.match(n) for n in names):
        return folder
    if len(names) == 1 and any(_WNID.match(n) for n in _subdirs(os.path.join(folder, names[0]))):
        return os.path.join(folder, names[0])
    raise _no_layout(layout, folder, "no <wnid> class folders found")


def _find_wnid(layout: Layout, folder: str) -> List[Image]:
    wnids = _wnid_index()
    what = ("the WordNet ids of its 200 classes" if layout.subset
            else "ImageNet WordNet ids (n01440764, ...)")
    root = _wnid_root(layout, folder)
    return [Image(p, index) for path, index in
            _class_folders(layout, root, wnids.get, what) for p in _images(path)]


def _find_v2(layout: Layout, folder: str, variant: Optional[str]) -> List[Image]:
    names = _subdirs(folder)
    index_dirs = [n for n in names if _class_index_of(n) is not None]
    if index_dirs:
        roots = [(folder, variant or v2_variant(os.path.basename(os.path.normpath(folder))))]
    else:
        roots = [(os.path.join(folder, n), v2_variant(n)) for n in names if v2_variant(n)]
        if not roots:
            raise _no_layout(layout, folder, "no class index folders 0..999 and no "
                                             "variant folder such as "
                                             "imagenetv2-matched-frequency-format-val")
        if variant is not None:
            roots = [(p, v) for p, v in roots if v == variant]
            if not roots:
                raise ImageNetXError(
                    f"Folder '{folder}' has no ImageNetV2 {variant} folder: pass "
                    "another variant or the folder that holds it")
    images = []
    for root, found_variant in roots:
        if found_variant is None:
            raise ImageNetXError(
                f"ImageNetV2 folder '{root}' does not say its variant: name it as "
                "released (imagenetv2-matched-frequency-format-val, "
                "imagenetv2-threshold0.7-format-val, imagenetv2-top-images-format-val) "
                f"or pass the variant ({', '.join(V2_VARIANTS)})")
        for path, index in _class_folders(layout, root, _class_index_of,
                                          "class indices 0..999"):
            images.extend(Image(p, index, (found_variant,)) for p in _images(path))
    return images


def _corruption_folders(layout: Layout, folder: str) -> List[Tuple[str, str]]:
    """``(path, corruption)`` of the corruption folders, directly under
    ``folder`` or (ImageNet-C) under its group folders (``noise/``, ...)."""
    groups = CORRUPTION_GROUPS if layout.kind == "c" else ()
    out, unknown = [], []
    for name in _subdirs(folder):
        path = os.path.join(folder, name)
        if name in layout.corruptions:
            out.append((path, name))
        elif name in groups:
            for inner in _subdirs(path):
                if inner in layout.corruptions:
                    out.append((os.path.join(path, inner), inner))
                else:
                    unknown.append(f"{name}/{inner}")
        else:
            unknown.append(name)
    if not out:
        raise _no_layout(layout, folder,
                         f"no corruption folders such as {layout.corruptions[0]}/")
    if unknown:
        shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        raise ImageNetXError(
            f"Folder '{folder}' has folders that are not {layout.title} corruptions "
            f"({shown}): expected {', '.join(layout.corruptions[:3])}, ... laid out as "
            f"{layout.folders}; remove or rename those folders")
    return out


def cbar_severity(corruption: str, name: str) -> Optional[int]:
    """The severity 1..5 an ImageNet-C-bar severity folder name says: ``1``
    .. ``5`` itself, or a parameter value of the corruption (``0.80`` ->
    1 for ``blue_noise_sample``); None for anything else."""
    if name in {str(s) for s in SEVERITIES}:
        return int(name)
    if "." not in name:
        return None  # an integer other than 1..5 is not a parameter the release writes
    try:
        value = float(name)
    except ValueError:
        return None
    for severity, param in zip(SEVERITIES, CBAR_PARAMS[corruption]):
        if abs(value - param) < 1e-6:
            return severity
    return None


def _severity_folders(layout: Layout, path: str, corruption: str) -> List[Tuple[str, int]]:
    """``(severity folder name, severity)`` of a corruption folder.

    Raises:
        ImageNetXError: for no severity folders, folders that are not
            severities, or (ImageNet-C-bar) two folders of one severity
    """
    names = _subdirs(path)
    if layout.kind == "cbar":
        found = [(n, cbar_severity(corruption, n)) for n in names]
        expected = ("severity folders 1..5 or the corruption's parameter values "
                    f"({', '.join(f'{p:.2f}' for p in CBAR_PARAMS[corruption])})")
    else:
        found = [(n, int(n) if n in {str(s) for s in SEVERITIES} else None) for n in names]
        expected = "severity folders 1..5"
    bad = [n for n, s in found if s is None]
    if bad or not names:
        raise ImageNetXError(
            f"{layout.title} folder '{path}' holds {', '.join(bad[:5]) or 'no folders'} "
            f"where {expected} belong (laid out as {layout.folders})")
    seen: Dict[int, str] = {}
    for n, s in found:
        if s in seen:
            raise ImageNetXError(
                f"{layout.title} folder '{path}' holds two folders of severity {s} "
                f"({seen[s]} and {n}): keep one of them")
        seen[s] = n
    return found


def _objectnet_folders() -> Dict[str, str]:
    from imagenetx.classes.ood import objectnet_folders  # lazy: start-up

    return objectnet_folders()


def _objectnet_root(layout: Layout, folder: str) -> str:
    """The folder holding ObjectNet's class folders: ``folder/images``,
    ``folder/objectnet-1.0/images`` (the zip's top folder) or ``folder``."""
    known = _objectnet_folders()
    for root in (os.path.join(folder, "images"),
                 os.path.join(folder, "objectnet-1.0", "images"), folder):
        if os.path.isdir(root) and any(n in known for n in _subdirs(root)):
            return root
    raise _no_layout(layout, folder, "no ObjectNet class folders such as "
                                     "images/alarm_clock/ found")


def _find_objectnet(layout: Layout, folder: str) -> List[Image]:
    """The images of ObjectNet's 113 classes that overlap ImageNet (their
    class index: the ObjectNet id, 0-112); the other 200 classes' folders
    are skipped."""
    from imagenetx.classes.ood import objectnet_classes  # lazy: start-up

    root = _objectnet_root(layout, folder)
    ids = {c.folder: c.index for c in objectnet_classes()}
    known = _objectnet_folders()
    names = _subdirs(root)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise unknown_folders_error(root, unknown, "ObjectNet classes",
                                    "the release's 313 (alarm_clock, ...)", layout.folders)
    if not any(n in ids for n in names):
        raise ImageNetXError(
            f"Folder '{root}' holds none of the 113 ObjectNet classes that overlap ImageNet "
            f"({', '.join(names[:3])}{' ...' if len(names) > 3 else ''}: not among them): "
            "pass the whole release, laid out as " + layout.folders)
    return [Image(p, ids[n]) for n in names if n in ids
            for p in _images(os.path.join(root, n))]


def _find_corrupted(layout: Layout, folder: str) -> List[Image]:
    wnids = _wnid_index()
    images = []
    for path, corruption in _corruption_folders(layout, folder):
        for name, severity in _severity_folders(layout, path, corruption):
            for cpath, index in _class_folders(layout, os.path.join(path, name),
                                               wnids.get, "ImageNet WordNet ids"):
                images.extend(Image(p, index, (corruption, severity))
                              for p in _images(cpath))
    return images


def find_images(layout: Layout, folder: str, variant: Optional[str] = None) -> List[Image]:
    """The images of a release folder in ``layout``, sorted by path.

    Args:
        layout: the benchmark's layout
        folder: the release folder (or, for ``<wnid>`` layouts, a folder
            holding only it)
        variant (None): ImageNetV2 only: the variant of a folder whose name
            does not say it, or the one variant to read of several

    Raises:
        ImageNetXError: for a missing folder, a folder in none of the
            layouts, folders that are not the benchmark's classes,
            corruptions or severities, or no images
    """
    root = os.path.abspath(os.path.expanduser(folder))
    if not os.path.isdir(root):
        raise ImageNetXError(
            f"{layout.title} folder '{folder}' does not exist: pass its release "
            f"folder, laid out as {layout.folders}")
    if variant is not None and (layout.kind != "v2" or variant not in V2_VARIANTS):
        raise ImageNetXError(
            f"A variant applies to ImageNetV2 only and is one of {', '.join(V2_VARIANTS)}, "
            f"not '{variant}'")
    if layout.kind == "v2":
        images = _find_v2(layout, root, variant)
    elif layout.kind == "objectnet":
        images = _find_objectnet(layout, root)
    elif layout.corruptions:
        images = _find_corrupted(layout, root)
    else:
        images = _find_wnid(layout, root)
    if not images:
        raise ImageNetXError(
            f"{layout.title} folder '{folder}' has class folders but no images "
            f"({', '.join(IMAGE_EXTENSIONS)}) in them: expected {layout.folders}")
    images.sort(key=lambda i: i.path)
    return images
