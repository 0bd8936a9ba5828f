"""How each benchmark's data is loaded, as data: its sources (a release
folder, a Hub repo, the download), the options each takes, and the one
function that checks a request against them and calls the source's loader.

:meth:`Benchmark.load <imagenetx.benchmarks.base.Benchmark.load>` calls
:func:`load_with`; the command line (``imagenetx load BENCHMARK --dir D``)
and the App's "Load a benchmark" form build their inputs from
:data:`LOADINGS`. The loaders themselves stay in each benchmark's folder
and are named here as ``"module:function"`` strings, imported when used:
this table imports nothing heavy, so the command line's parser is built
from it without FiftyOne.

A source is named by one keyword of :meth:`Benchmark.load`, its location the
keyword's value (``dir="/data/ImageNet-D"``, ``hub="ILSVRC/imagenet-1k"``);
at most one source of a benchmark has no location, and it is used when no
source is named (cue conflict's download).
"""

import importlib
import os
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

from imagenetx.benchmarks.ood.layouts import LAYOUTS, Layout
from imagenetx.errors import ImageNetXError
from imagenetx.options import V2_VARIANTS


@dataclass(frozen=True)
class Option:
    """One option of a source (or of every source: :data:`DATASET_OPTIONS`).

    Attributes:
        name: its keyword of :meth:`Benchmark.load` (and its loader's)
        label: its label in the App's form
        help: what it is, one line
        type: ``"str"``, ``"int"`` or ``"bool"``
        choices: the values it takes, where they are few
        default: its value when not given, shown in the form
    """

    name: str
    label: str
    help: str
    type: str = "str"
    choices: Tuple[str, ...] = ()
    default: object = None


@dataclass(frozen=True)
class Source:
    """One place a benchmark's data is loaded from.

    Attributes:
        name: its keyword of :meth:`Benchmark.load` (``dir``, ``hub``), or,
            for the source without a location, its name (``download``)
        label: what its location is, in a few words (``release folder``); the
            App form's label of it, capitalized
        help: what its location is (or what the source does)
        loader: ``"module:function"`` that builds the dataset, returning
            ``(dataset, summary)``
        location: the loader's keyword for the location; None: the source
            takes none (used when no source is named)
        options: the options it takes besides :data:`DATASET_OPTIONS`
        fixed: keywords always passed to the loader
        takes: the keywords of the caller's context the loader accepts
            (``progress``, ``token``); the others are not passed to it
    """

    name: str
    label: str
    help: str
    loader: str
    location: Optional[str] = None
    options: Tuple[Option, ...] = ()
    fixed: Tuple[Tuple[str, object], ...] = ()
    takes: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Loading:
    """How one benchmark's data is loaded.

    Attributes:
        benchmark: the benchmark's name (``imagenet_d``)
        title: its display name
        default_name: the dataset name when none is given (a source's
            loader may say another, e.g. ``imagenet-x-train``)
        sources: where it is loaded from, the default (if any) first
    """

    benchmark: str
    title: str
    default_name: str
    sources: Tuple[Source, ...]

    def source(self, name: str) -> Optional[Source]:
        """The source called ``name``, or None."""
        return next((s for s in self.sources if s.name == name), None)

    @property
    def default_source(self) -> Optional[Source]:
        """The source used when none is named: the one without a location."""
        return next((s for s in self.sources if s.location is None), None)


#: the options every source takes: the dataset it builds
DATASET_OPTIONS = (
    Option("name", "Dataset name", "the dataset name (default: the benchmark's)"),
    Option("overwrite", "Replace an existing dataset of that name",
           "replace an existing dataset", type="bool", default=False),
    Option("gt_field", "Ground truth field", "the ground truth fo.Classification field "
           "to write", default="ground_truth"),
)

#: the keywords of the caller's context, passed to the loaders that take them
CONTEXT = ("progress", "token")

_HUB_SPLIT = Option("split", "Split", "the split to load: val (default) or train for "
                    "ImageNet's shards, the repo's split for a FiftyOne-format repo")
_MAX_SAMPLES = Option("max_samples", "Max samples", "load at most this many samples "
                      "(ImageNet's shards: only the shards they need)", type="int")

IMAGENET_X = Loading("imagenet_x", "ImageNet-X", "imagenet-x-val", (
    Source("dir", "ImageNet folder", "a local ImageNet folder (val/ or train/, flat or "
           "in WordNet id folders), tagged with ImageNet-X by file name",
           "imagenetx.benchmarks.imagenet_x.sources:load_imagenet_dir", "imagenet_dir",
           (Option("split", "Split", "which split the folder holds", choices=("val", "train"),
                   default="val"),)),
    Source("hub", "repo id", "a Hugging Face Hub dataset, ORG/NAME: ImageNet's parquet or "
           "webdataset shards (ILSVRC/imagenet-1k, timm/imagenet-1k-wds) or a "
           "FiftyOne-format repo (ImageNet-D copies are converted)",
           "imagenetx.benchmarks.imagenet_x.sources:load_hub_dataset", "repo_id",
           (_HUB_SPLIT, _MAX_SAMPLES,
            Option("workers", "Workers", "ImageNet's shards downloaded at once (default: 4)",
                   type="int"),
            Option("revision", "Revision", "the branch, tag or commit to pull (default: "
                   "the main branch, resolved to its commit when the pull starts)"),
            Option("media_from", "Media from", "a pushed copy without its gated images: "
                   "pull them from this ImageNet repo (ILSVRC/imagenet-1k) and re-attach "
                   "them by file name")),
           takes=("progress", "token")),
))

IMAGENET_D = Loading("imagenet_d", "ImageNet-D", "imagenet-d", (
    Source("dir", "release folder", "the ImageNet-D release folder (background/, "
           "texture/, material/)",
           "imagenetx.benchmarks.imagenet_d.loaders:load_imagenet_d_dir", "release_dir"),
    Source("hub", "repo id", "a Hugging Face Hub copy, ORG/NAME: the release "
           "(zcs15/ImageNet-D) or a FiftyOne-format one (Voxel51/ImageNet-D)",
           "imagenetx.benchmarks.imagenet_d.loaders:load_imagenet_d_hub", "repo_id",
           (Option("split", "Split", "the repo's split, where it has several"), _MAX_SAMPLES),
           takes=("token",)),
))

IMAGENET_E = Loading("imagenet_e", "ImageNet-E", "imagenet-e", (
    Source("dir", "release folder", "the ImageNet-E release folder (labels.txt, ori/, "
           "20_adv/, 01/, ...): a grouped dataset, one group per source image",
           "imagenetx.benchmarks.imagenet_e.loaders:load_imagenet_e", "release_dir"),
))

CUE_CONFLICT = Loading("cue_conflict", "Cue-conflict", "cue-conflict", (
    Source("download", "download", "the public release of the 1,280 stimuli, downloaded "
           "once into the cache ($IMAGENETX_CUE_CONFLICT_DIR if set)",
           "imagenetx.benchmarks.cue_conflict.loaders:load_cue_conflict"),
    Source("dir", "stimuli folder", "a local copy of the stimuli, laid out as "
           "<category>/<shape><i>-<texture><j>.png",
           "imagenetx.benchmarks.cue_conflict.loaders:load_cue_conflict", "folder"),
))


def _imagenet_val(role: str) -> Option:
    return Option("imagenet_dir", "ImageNet val folder", f"an ImageNet val folder: {role}")


IMAGENET_O = Loading("imagenet_o", "ImageNet-O", "imagenet-o", (
    Source("dir", "release folder", "the ImageNet-O release folder, <wnid>/<image> (2,000 "
           "images of 200 classes)",
           "imagenetx.benchmarks.ood_detection.loaders:load_imagenet_o", "folder",
           (_imagenet_val("its images of ImageNet-O's 200 classes are the ID ones "
                          "(required)"),)),
))

NINCO = Loading("ninco", "NINCO", "ninco", (
    Source("dir", "release folder", "the NINCO release folder (NINCO_OOD_classes/<class>/"
           "<image>, ...), with its OOD unit tests generated",
           "imagenetx.benchmarks.ood_detection.loaders:load_ninco", "folder",
           (_imagenet_val("the ID images, and the unit tests' sources"),
            Option("unit_tests", "Unit tests per kind", "the OOD unit-test images generated "
                   "per kind, of NINCO's 400 (0: none)", type="int", default=400),
            Option("seed", "Seed", "the seed of the generated unit tests", type="int",
                   default=0),
            Option("unit_tests_dir", "Unit tests folder", "where the generated unit-test "
                   "images are written (default: the dataset's folder in FiftyOne's dataset "
                   "folder)"))),
))

OPENOOD_IMAGENET = Loading("openood_imagenet", "OpenOOD ImageNet-1K", "openood-imagenet", (
    Source("dir", "data folder", "OpenOOD v1.5's data folder (images_largescale/, "
           "images_classic/), read as its ImageNet-1K lists name the files",
           "imagenetx.benchmarks.ood_detection.loaders:load_openood_imagenet", "folder",
           (Option("split", "Split", "the ID and OOD lists: test (45,000 ID; SSB-hard, NINCO, "
                   "iNaturalist, Textures, OpenImage-O) or val (5,000 ID; OpenImage-O)",
                   choices=("test", "val"), default="test"),
            Option("sets", "OOD sets", "the OOD sets to load, comma-separated (default: all "
                   "of the split's: ssb_hard, ninco, inaturalist, textures, openimage_o)"),
            _imagenet_val("the ID images, by file name (default: "
                          "images_largescale/imagenet_1k/val/)"),
            Option("lists_dir", "Lists folder", "a local copy of OpenOOD's benchmark_imglist/ "
                   "(default: $IMAGENETX_OPENOOD_DIR, else downloaded into the cache)"))),
))


def ood_loading(layout: Layout) -> Loading:
    """How an OOD benchmark's release folder is loaded."""
    options = ((Option("variant", "Variant", "the variant of a folder whose name does not "
                       "say it, or the one variant to read of several",
                       choices=V2_VARIANTS),) if "variant" in layout.fields else ())
    return Loading(layout.benchmark, layout.title, layout.default_name, (
        Source("dir", "release folder", f"the {layout.title} release folder, "
               f"{layout.folders}", "imagenetx.benchmarks.ood.loaders:load_ood_dir",
               "folder", options, fixed=(("kind", layout.kind),)),
    ))


#: the built-in benchmarks' loadings, by benchmark name
LOADINGS: Dict[str, Loading] = {lo.benchmark: lo for lo in (
    IMAGENET_X, IMAGENET_D, IMAGENET_E, CUE_CONFLICT,
    *(ood_loading(layout) for layout in LAYOUTS.values()),
    IMAGENET_O, NINCO, OPENOOD_IMAGENET)}


def _quoted(names) -> str:
    names = [f"`{n}`" for n in names]
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def _source_phrase(source: Source) -> str:
    return (f"`{source.name}=...` ({source.label})" if source.location
            else f"the {source.name} (no source named)")


def _loader(source: Source) -> Callable:
    module, _, function = source.loader.partition(":")
    return getattr(importlib.import_module(module), function)


def choose_source(loading: Loading, options: dict) -> Source:
    """The source ``options`` name (one keyword), else the default one.

    Raises:
        ImageNetXError: for two sources, an unknown one, or none where the
            benchmark has no default
    """
    named = [k for k, v in options.items() if v is not None
             and (s := loading.source(k)) is not None and s.location]
    if len(named) > 1:
        raise ImageNetXError(f"{_quoted(named)} are two sources of {loading.title}: pass one")
    if named:
        return loading.source(named[0])
    default = loading.default_source
    if default is None:
        raise ImageNetXError(
            f"Name where to load {loading.title} from: "
            + " or ".join(_source_phrase(s) for s in loading.sources))
    return default


def load_with(loading: Loading, progress=None, token: Optional[str] = None, **options):
    """Loads a benchmark's data as ``loading`` says: checks the request,
    then calls the source's loader.

    Args:
        loading: the benchmark's :class:`Loading`
        progress (None): the loader's ``progress=`` argument, where it takes one
        token (None): a Hugging Face token, where the source reads the Hub
        **options: one source keyword with its location (``dir=FOLDER``,
            ``hub=REPO_ID``; none: the default source), the source's options
            and :data:`DATASET_OPTIONS`; a None value counts as not given

    Returns:
        ``(dataset, summary)``

    Raises:
        ImageNetXError: before anything is loaded, for a source the
            benchmark has not, an option its source does not take or a
            file given as a folder (``dir``); then
            whatever the loader raises
    """
    given = {k: v for k, v in options.items() if v is not None}
    known = {o.name for s in loading.sources for o in (*s.options, *DATASET_OPTIONS)}
    keywords = {s.name for s in loading.sources if s.location}
    unknown = [k for k in given if k not in known and k not in keywords]
    if unknown:
        raise ImageNetXError(
            f"{loading.title} has no source or option `{unknown[0]}`: it loads from "
            + " or ".join(_source_phrase(s) for s in loading.sources))
    source = choose_source(loading, given)
    location = given.pop(source.name, None) if source.location else None
    others = [k for k in given if k not in {o.name for o in (*source.options, *DATASET_OPTIONS)}]
    if others:
        raise ImageNetXError(_not_taken(loading, source, others[0]))
    if source.name == "dir" and location is not None and os.path.isfile(
            os.path.expanduser(str(location))):
        raise ImageNetXError(
            f"`dir='{location}'` is a file, not a folder: give the folder that holds "
            f"{loading.title}'s images: {source.help}")
    kwargs = dict(source.fixed)
    if source.location:
        kwargs[source.location] = location
    context = {"progress": progress, "token": token}
    kwargs.update({k: context[k] for k in source.takes if context.get(k) is not None})
    return _loader(source)(**kwargs, **given)


def _not_taken(loading: Loading, source: Source, name: str) -> str:
    """Why option ``name`` does not apply to ``source``, and what it applies to."""
    users = [s.name for s in loading.sources if name in {o.name for o in s.options}]
    return (f"`{name}` applies to {loading.title}'s source {_quoted(users)}, not to "
            f"`{source.name}`")


def load_hint(benchmark: str) -> str:
    """How a benchmark is loaded, for messages: ``load ImageNet-D from
    `dir=...` (release folder) or `hub=...` (repo id)``."""
    loading = LOADINGS[benchmark]
    return (f"load {loading.title} from "
            + " or ".join(_source_phrase(s) for s in loading.sources))
