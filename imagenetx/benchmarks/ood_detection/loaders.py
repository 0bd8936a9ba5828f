"""Load an OOD-detection benchmark onto FiftyOne: its OOD images beside
ImageNet val images as in-distribution, in one dataset.

-   :func:`load_imagenet_o`: ImageNet-O's release folder (``<wnid>/<image>``,
    2,000 images of 200 classes) and the val images of those 200 classes
-   :func:`load_ninco`: NINCO's release folder (``NINCO_OOD_classes/<class>/
    <image>``), its 17 OOD unit tests generated
    (:mod:`~imagenetx.benchmarks.ood_detection.unit_tests`), and ImageNet val
-   :func:`load_openood_imagenet`: OpenOOD v1.5's ImageNet-1K lists read from
    its data folder (:mod:`~imagenetx.benchmarks.ood_detection.openood`)

The samples follow :mod:`~imagenetx.benchmarks.ood_detection.contract`;
the ID images also carry ImageNet-X (its ``x:<factor>`` tag and
``imagenetx`` field), so a detector's false positives read per factor.
"""

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

import fiftyone as fo

from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.benchmarks.imagenet_x.sources import find_imagenet_files
from imagenetx.benchmarks.imagenet_x.tagging import DEFAULT_FIELD, new_sample_annotations
from imagenetx.benchmarks.ood.layouts import (
    IMAGE_EXTENSIONS, Layout, find_images, unknown_folders_error)
from imagenetx.benchmarks.ood_detection import openood
from imagenetx.benchmarks.ood_detection import unit_tests as ninco_tests
from imagenetx.benchmarks.ood_detection.benchmark import OODDetectionBenchmark
from imagenetx.benchmarks.ood_detection.contract import (
    CLASS_FIELD,
    FAR,
    ID,
    IMAGENET_VAL,
    INFO_KEY,
    NEAR,
    OOD,
    ROLE_FIELD,
    ROLES,
    SOURCE_FIELD,
    SOURCES,
)
from imagenetx.benchmarks.loading import IMAGENET_O, NINCO, OPENOOD_IMAGENET, Loading
from imagenetx.benchmarks.scenarios import FieldNames
from imagenetx.classes.imagenet import class_table
from imagenetx.errors import ImageNetXError
from imagenetx.memory import gc_paused
from imagenetx.store.datasets import check_new_dataset_name, mark_benchmark
from imagenetx.store.ingest import insert_samples, new_dataset
from imagenetx.store.schema import (
    declare_classification,
    declare_imagenetx_field,
    raw_classification,
)

#: ImageNet-O's release layout (the folder walk of the ImageNet-A/R loaders)
IMAGENET_O_LAYOUT = Layout("o", "imagenet_o", "ImageNet-O", "<wnid>/<image>", "imagenet-o")

#: NINCO's folders: the OOD classes (read), the unit tests (generated
#: instead) and the cleaned popular OOD sets (not part of the benchmark)
NINCO_CLASSES_DIR = "NINCO_OOD_classes"
NINCO_FOLDERS = f"{NINCO_CLASSES_DIR}/<class>/<image>, NINCO_OOD_unit_tests/, " \
                "NINCO_popular_datasets_subsamples/"

#: NINCO's 64 OOD classes, as its folders name them (j-cb/NINCO
#: ``data/NINCO_OOD_classes.csv``)
NINCO_CLASSES = (
    "Caracal caracal caracal", "amphiuma_means", "aphanizomenon_flosaquae", "araneus_gemma",
    "arctocephalus_galapagoensis", "bagpipe", "batrachoseps_attenuatus", "cable",
    "chicken_quesadilla", "cirsium_pitcheri", "creme_brulee", "ctenolepisma_longicaudata",
    "cup_cakes", "darlingtonia_californica", "dendrolagus_lumholtzi", "donuts", "door",
    "empty_water_dispencer", "epithelantha_micromeris", "erysimum_franciscanum", "f_field_road",
    "f_forest_path", "ferocactus_pilosus", "fire_extinguisher", "fireworks", "french_fries",
    "glass_of_milk", "gramophone", "haemulon_sciurus", "high heels", "hindu_temple",
    "hippopus_hippopus", "lasionycteris_noctivagans", "lathyrus_odoratus", "lepomis_auritus",
    "leptoglossus_phyllopus", "mbira", "microcystis_wesenbergii", "octopus_bimaculoides",
    "octopus_rubescens", "ozotoceros_bezoarticus", "platycephalus_fuscus", "polistes_dominula",
    "pseudorca_crassidens", "pyramid", "s_sky", "sarpa_salpa", "sarracenia_alata", "scissors",
    "sepia_apama", "sepia_officinalis", "sepioteuthis_australis", "shuttlecock",
    "skipper_caterpillar", "spaghetti_bolognese", "stapler", "streptopus_lanceolatus",
    "tapirus_bairdii", "triturus_marmoratus", "tursiops_aduncus", "vaccinium_reticulatum",
    "waffles", "walker", "windsor_chair",
)


class OODImage(NamedTuple):
    """One OOD image: its path, role, source and class."""

    path: str
    role: str
    source: str
    ood_class: Optional[str]


@dataclass
class OODDetectionSummary:
    """What a load found and wrote.

    Attributes:
        dataset: the dataset's name
        title: the benchmark's display name
        source: the folder read
        by_source: images per ``ood_source``, ID first
        by_role: images per ``ood_role``
        notes: what the user should know (no ID images, tests left out)
    """

    dataset: str
    title: str
    source: str
    by_source: Dict[str, int]
    by_role: Dict[str, int]
    notes: List[str] = field(default_factory=list)

    @property
    def samples(self) -> int:
        return sum(self.by_source.values())

    def __str__(self):
        text = (f"{self.title} dataset '{self.dataset}' from {self.source}: "
                f"{self.samples:,} images; by role: "
                + ", ".join(f"{r} {n:,}" for r, n in self.by_role.items())
                + "; by source: " + ", ".join(f"{s} {n:,}" for s, n in self.by_source.items()))
        return text + "".join(f"; {note}" for note in self.notes)


def _val_images(imagenet_dir: str, classes=None) -> Dict[str, Tuple[str, int]]:
    """ImageNet val file name -> ``(path, class index)`` of a val folder (any
    layout :func:`find_imagenet_files` reads), only of ``classes`` if given."""
    found = find_imagenet_files(imagenet_dir, "val")
    out = {}
    for name, (path, klass) in found.items():
        klass = anno.class_of_file(name) if klass is None else klass
        if classes is None or klass in classes:
            out[name] = (path, klass)
    return out


def _write(loading: Loading, name: Optional[str], overwrite: bool, gt_field: str,
           id_images: Dict[str, Tuple[str, int]], ood: List[OODImage], info: dict):
    """The dataset: ID images (ground truth, ImageNet-X) then OOD images,
    each with its role, source and class; the benchmark's info and scenarios."""
    name = name or loading.default_name
    check_new_dataset_name(name, overwrite)
    labels = class_table().labels
    files = sorted(id_images)
    annotations, _ = new_sample_annotations(name, files, split="val")

    def rows():
        for file_name, fields in zip(files, annotations):
            path, klass = id_images[file_name]
            yield {"filepath": path, gt_field: raw_classification(labels[klass], klass),
                   ROLE_FIELD: ID, SOURCE_FIELD: IMAGENET_VAL, **(fields or {})}
        for image in ood:
            yield {"filepath": image.path, ROLE_FIELD: image.role,
                   SOURCE_FIELD: image.source, CLASS_FIELD: image.ood_class}

    with new_dataset(name, overwrite) as dataset:
        declare_classification(dataset, gt_field)
        declare_imagenetx_field(dataset, DEFAULT_FIELD)
        for path in (ROLE_FIELD, SOURCE_FIELD, CLASS_FIELD):
            dataset.add_sample_field(path, fo.StringField)
        insert_samples(dataset, rows())
        dataset.info["imagenetx"] = {INFO_KEY: info}
        mark_benchmark(dataset, loading.benchmark)
        OODDetectionBenchmark(loading).tagged(dataset, FieldNames(gt_field=gt_field))
    return dataset


def _summary(dataset, title: str, folder: str, id_count: int, ood: List[OODImage],
             notes=()) -> OODDetectionSummary:
    sources = Counter(i.source for i in ood)
    roles = Counter(i.role for i in ood)
    if id_count:
        sources[IMAGENET_VAL] = roles[ID] = id_count
    return OODDetectionSummary(
        dataset.name, title, folder,
        {s: sources[s] for s in SOURCES if sources[s]},
        {r: roles[r] for r in ROLES if roles[r]}, list(notes))


def _folder(title: str, folder: str, layout: str) -> Path:
    root = Path(folder).expanduser().absolute()
    if not root.is_dir():
        raise ImageNetXError(
            f"{title} folder '{folder}' does not exist: pass its folder, laid out as {layout}")
    return root


# -- ImageNet-O ------------------------------------------------------------------


@gc_paused()
def load_imagenet_o(folder: str, imagenet_dir: Optional[str] = None, name: Optional[str] = None,
                    overwrite: bool = False, gt_field: str = "ground_truth"):
    """Builds an ImageNet-O dataset: its 2,000 images (``ood_role`` ``ood``)
    and the ImageNet val images of the 200 classes its folders name (``id``),
    no other val image.

    Args:
        folder: the release folder, ``<wnid>/<image>`` (or the folder holding it)
        imagenet_dir: an ImageNet val folder (required: the ID images)
        name (None): the dataset name (default ``imagenet-o``)
        overwrite (False): whether to replace an existing dataset
        gt_field ("ground_truth"): the ground truth field of the ID images

    Returns:
        ``(dataset, OODDetectionSummary)``; ``dataset.info["imagenetx"]["ood"]
        ["class_indices"]``: the classes, sorted

    Raises:
        ImageNetXError: before anything is written, for a folder not in the
            release layout, no ``imagenet_dir``, or a val folder without
            images of those classes
    """
    if not imagenet_dir:
        raise ImageNetXError(
            "ImageNet-O is scored against the ImageNet val images of its 200 classes: pass "
            "`imagenet_dir`, an ImageNet val folder")
    images = find_images(IMAGENET_O_LAYOUT, folder)
    wnids = class_table().wnids
    classes = sorted({i.class_index for i in images})
    id_images = _val_images(imagenet_dir, set(classes))
    if not id_images:
        raise ImageNetXError(
            f"ImageNet val folder '{imagenet_dir}' holds no image of ImageNet-O's "
            f"{len(classes)} classes ({wnids[classes[0]]}, ...): pass the ImageNet val folder")
    ood = [OODImage(i.path, OOD, "imagenet_o", wnids[i.class_index]) for i in images]
    dataset = _write(IMAGENET_O, name, overwrite, gt_field, id_images, ood,
                     {"class_indices": classes})
    expected = 50 * len(classes)
    notes = ([f"{len(id_images):,} of the {expected:,} val images of its {len(classes)} "
              "classes found"] if len(id_images) != expected else [])
    return dataset, _summary(dataset, "ImageNet-O", folder, len(id_images), ood, notes)


# -- NINCO -----------------------------------------------------------------------


def _ninco_root(folder: str) -> Path:
    """The folder holding ``NINCO_OOD_classes/``: ``folder`` or its one child
    (the archive unpacks into ``NINCO/``)."""
    root = _folder("NINCO", folder, NINCO_FOLDERS)
    if (root / NINCO_CLASSES_DIR).is_dir():
        return root
    children = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    if len(children) == 1 and (children[0] / NINCO_CLASSES_DIR).is_dir():
        return children[0]
    raise ImageNetXError(
        f"Folder '{folder}' is not in the NINCO release layout {NINCO_FOLDERS} (no "
        f"{NINCO_CLASSES_DIR} folder found): pass the folder NINCO_all.tar.gz unpacks into")


def _images_in(folder: Path) -> List[str]:
    return sorted(str(p) for p in folder.iterdir()
                  if p.name.lower().endswith(IMAGE_EXTENSIONS) and p.is_file())


def _ninco_images(folder: str) -> List[OODImage]:
    root = _ninco_root(folder) / NINCO_CLASSES_DIR
    names = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    unknown = [n for n in names if n not in NINCO_CLASSES]
    if unknown:
        raise unknown_folders_error(root, unknown, "NINCO classes",
                                    f"NINCO's 64 ({NINCO_CLASSES[1]}, ...)", NINCO_FOLDERS)
    images = [OODImage(p, NEAR, "ninco", n) for n in names for p in _images_in(root / n)]
    if not images:
        raise ImageNetXError(
            f"NINCO folder '{root}' has no images ({', '.join(IMAGE_EXTENSIONS)}) in its "
            f"class folders: expected {NINCO_FOLDERS}")
    return images


def unit_test_val_files(per_kind: int = ninco_tests.PER_KIND,
                        kinds=ninco_tests.KINDS) -> Dict[int, str]:
    """torchvision val index -> ImageNet val file name of the images NINCO's
    unit tests are made from (the first ``per_kind`` of each test)."""
    names, _ = anno.filename_labels()  # ImageFolder order: torchvision's indices
    return {i.val_index: names[i.val_index] for i in ninco_tests.planned(per_kind, kinds)}


@gc_paused()
def load_ninco(folder: str, imagenet_dir: Optional[str] = None,
               unit_tests: int = ninco_tests.PER_KIND, seed: int = 0,
               unit_tests_dir: Optional[str] = None, name: Optional[str] = None,
               overwrite: bool = False, gt_field: str = "ground_truth"):
    """Builds a NINCO dataset: its 64 OOD classes (``ood_role`` ``near``,
    ``ood_source`` ``ninco``), its 17 OOD unit tests generated, seeded
    (``far``, ``ninco_unit_tests``, the test's name as ``ood_class``), and,
    with ``imagenet_dir``, every ImageNet val image there (``id``).

    Args:
        folder: the release folder (``NINCO_OOD_classes/<class>/<image>``;
            its ``NINCO_OOD_unit_tests/`` is not read: they are generated)
        imagenet_dir (None): an ImageNet val folder: the ID images, and the
            sizes and pixels of the unit tests' source images (without it:
            224 x 224 pictures, the two pixel permutations left out)
        unit_tests (400): images generated per unit test, of NINCO's 400
            (the first by rank); 0: none
        seed (0): the seed of the unit tests' noise
        unit_tests_dir (None): where they are written (default:
            ``<FiftyOne dataset folder>/<name>/ninco_unit_tests/seed-<seed>``);
            images already there are kept
        name (None): the dataset name (default ``ninco``)
        overwrite (False): whether to replace an existing dataset
        gt_field ("ground_truth"): the ground truth field of the ID images

    Returns:
        ``(dataset, OODDetectionSummary)``

    Raises:
        ImageNetXError: before anything is written, for a folder not in the
            release layout, or a val folder that lacks a unit test's source
    """
    per_kind = unit_tests
    if not 0 <= per_kind <= ninco_tests.PER_KIND:
        raise ImageNetXError(
            f"NINCO has {ninco_tests.PER_KIND} images per unit test: pass `unit_tests` "
            f"between 0 and {ninco_tests.PER_KIND}, not {per_kind}")
    ood = _ninco_images(folder)
    name = name or NINCO.default_name
    check_new_dataset_name(name, overwrite)
    id_images = _val_images(imagenet_dir) if imagenet_dir else {}
    notes = [] if imagenet_dir else ["no ImageNet val folder (`imagenet_dir`): no ID images"]
    kinds = ninco_tests.KINDS if imagenet_dir else tuple(
        k for k in ninco_tests.KINDS if k not in ninco_tests.PIXEL_KINDS)
    if per_kind:
        val_paths = None
        if imagenet_dir:
            files = unit_test_val_files(per_kind, kinds)
            missing = sorted(f for f in files.values() if f not in id_images)
            if missing:
                raise ImageNetXError(
                    f"ImageNet val folder '{imagenet_dir}' lacks {len(missing):,} of the "
                    f"{len(set(files.values())):,} val images NINCO's unit tests are made from "
                    f"({', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}): pass "
                    "the whole val folder, or `unit_tests=0`")
            val_paths = {i: id_images[f][0] for i, f in files.items()}
        else:
            notes.append(f"{' and '.join(ninco_tests.PIXEL_KINDS)} left out (they permute "
                         "val images' pixels)")
        out_dir = unit_tests_dir or os.path.join(
            fo.config.default_dataset_dir, name, "ninco_unit_tests", f"seed-{seed}")
        made = ninco_tests.generate(ninco_tests.planned(per_kind, kinds), out_dir, seed,
                                   val_paths)
        ood += [OODImage(path, FAR, "ninco_unit_tests", item.kind) for item, path in made]
        notes.append(f"unit tests in {out_dir}")
    dataset = _write(NINCO, name, overwrite, gt_field, id_images, ood,
                     {"unit_tests": {"per_kind": per_kind, "seed": seed}})
    return dataset, _summary(dataset, "NINCO", folder, len(id_images), ood, notes)


# -- OpenOOD v1.5 ImageNet-1K --------------------------------------------------


def _ood_class(rel: str) -> Optional[str]:
    """A list path's class folder (``ssb_hard/<wnid>/``, ``ninco/<class>/``,
    ``texture/<class>/``); None for the flat sets (``.../images/``)."""
    parts = rel.split("/")
    return parts[-2] if len(parts) > 2 and parts[-2] != "images" else None


def _missing_line(folder: str, split: str, missing: Dict[str, Tuple[int, int, List[str]]]):
    total = sum(n for n, _, _ in missing.values())
    parts = [f"{n:,} of {m:,} from {source} ({', '.join(first[:2])}"
             f"{' ...' if n > 2 else ''})" for source, (n, m, first) in missing.items()]
    return ImageNetXError(
        f"Folder '{folder}' lacks {total:,} of the images OpenOOD's ImageNet-1K {split} lists "
        f"name: {'; '.join(parts)}: put them where the lists name them (images_largescale/, "
        "images_classic/ for textures), or pass `sets` without the sets you lack")


@gc_paused()
def load_openood_imagenet(folder: str, split: str = "test", sets: Optional[str] = None,
                          imagenet_dir: Optional[str] = None, lists_dir: Optional[str] = None,
                          name: Optional[str] = None, overwrite: bool = False,
                          gt_field: str = "ground_truth"):
    """Builds OpenOOD v1.5's ImageNet-1K benchmark from its lists: the ID
    split's ImageNet val images (test: 45,000; val: 5,000) and each OOD set
    (test: SSB-hard and NINCO ``near``; iNaturalist, Textures, OpenImage-O
    ``far``), read from the user's folders as the lists name the files.

    Args:
        folder: OpenOOD's data folder (``images_largescale/``,
            ``images_classic/``), or a folder holding the lists' top folders
            (``imagenet_1k/``, ``ssb_hard/``, ...) itself
        split ("test"): ``test`` or ``val``
        sets (None): the OOD sets to load, comma-separated (default: all of
            the split's)
        imagenet_dir (None): read the ID images from this ImageNet val folder
            by file name instead
        lists_dir (None): a local copy of ``benchmark_imglist/`` (default:
            ``$IMAGENETX_OPENOOD_DIR``, else downloaded into the cache)
        name (None): the dataset name (default ``openood-imagenet``)
        overwrite (False): whether to replace an existing dataset
        gt_field ("ground_truth"): the ground truth field of the ID images
            (the lists' labels)

    Returns:
        ``(dataset, OODDetectionSummary)``

    Raises:
        ImageNetXError: before anything is written, for a folder that holds
            none of the lists' folders (what it expected), or missing images
            (how many, from which set, the first names)
    """
    chosen = openood.split_sets(split, sets)
    root = _folder("OpenOOD", folder, "images_largescale/<set>/..., images_classic/texture/...")
    lists = openood.read_lists(chosen, lists_dir)
    val = _val_images(imagenet_dir) if imagenet_dir else None
    id_images, ood, missing, found_any = {}, [], {}, False
    for item in chosen:
        entries = lists[item.source]
        if item.role == ID and val is not None:
            located = [(val.get(os.path.basename(rel), (None,))[0], rel, label)
                       for rel, label in entries]
            found_any = True
        else:
            base = openood.set_root(root, item, entries[0][0]) if entries else None
            found_any |= base is not None
            base = base or root / item.root
            located = [(str(base / rel), rel, label) for rel, label in entries]
            located = [(p if os.path.isfile(p) else None, rel, label) for p, rel, label in located]
        lacking = [rel for p, rel, _ in located if p is None]
        if lacking:
            missing[item.source] = (len(lacking), len(entries), lacking)
        elif item.role == ID:
            id_images.update((os.path.basename(p), (p, label)) for p, _, label in located)
        else:
            ood += [OODImage(p, item.role, item.source, _ood_class(rel)) for p, rel, _ in located]
    if not found_any:
        raise ImageNetXError(
            f"Folder '{folder}' is not OpenOOD's data folder: expected images_largescale/ "
            "(imagenet_1k/val/, ssb_hard/, ninco/, inaturalist/, openimage_o/) and "
            "images_classic/texture/, as OpenOOD's lists name the files")
    if missing:
        raise _missing_line(folder, split, missing)
    dataset = _write(OPENOOD_IMAGENET, name, overwrite, gt_field, id_images, ood,
                     {"id_split": split, "sets": [s.source for s in chosen[1:]]})
    return dataset, _summary(dataset, "OpenOOD ImageNet-1K", folder, len(id_images), ood)
