"""Commands that build or change datasets: ``demo``, ``tag``, ``load``, ``edit``."""

# lazy imports: start-up (the parser is built, and --help shown, without FiftyOne, torch or scipy)

from imagenetx.cli.base import CommandGroup, print_text
from imagenetx.cli.flags import add_gt_field

TITLE = "build datasets"


def register(group: CommandGroup) -> None:
    """Adds this module's commands."""
    p = group.add("demo", run_demo, "build the offline demo dataset (48,868 val images)")
    p.add_argument("--name", default="imagenet-x-demo")
    p.add_argument("--overwrite", action="store_true", help="replace an existing dataset")
    p.add_argument("--imagenet-dir", help="use the real images of this ImageNet val folder")

    p = group.add("tag", run_tag, "attach ImageNet-X to an existing dataset by file name")
    p.add_argument("--dataset", required=True)
    p.add_argument("--tag-prefix", default="x:")
    p.add_argument("--by-stem", action="store_true",
                   help="match by file stem whatever the extension (edited copies of val "
                        "images, ILSVRC2012_val_XXXXXXXX.png)")
    add_gt_field(p)

    p = group.add("load", run_load, "build a dataset of a benchmark from its release "
                                    "folder (--dir), the Hub (--hub) or its download")
    add_load_inputs(p)

    p = group.add("push", run_push, "share a dataset with its prediction fields and "
                                    "evaluations on the Hugging Face Hub (FiftyOne's "
                                    "push_to_hub, a card with the error-ratio table)")
    p.add_argument("--dataset", required=True)
    p.add_argument("--repo", required=True, metavar="USER/NAME",
                   help="the new dataset repo, in your token's namespace")
    p.add_argument("--private", action="store_true", help="make the new repo private")
    p.add_argument("--with-media", action="store_true",
                   help="upload images pulled from a gated repo too (default: 1-pixel "
                        "stand-ins, re-attached with load imagenet-x --hub REPO "
                        "--media-from SOURCE)")
    p.add_argument("--media-root", "--allow-media-outside", dest="media_roots",
                   action="extend", nargs="+", default=[], metavar="DIR",
                   help="upload the files under DIR (repeatable): folders a dataset's Hub "
                        "origin does not give it, or those of a dataset of no origin; a "
                        "system folder (/etc, /usr, ...) only when named (a repo may name "
                        "files such as /etc/passwd)")
    p.add_argument("--confirm-folders", action="store_true",
                   help="for a dataset of no Hub origin: upload from the folders the push "
                        "shows (system folders only with --media-root)")

    p = group.add("edit", run_edit, "edit the masked objects of a dataset (size, position, "
                                    "direction, background) into group slices of the originals")
    p.add_argument("--dataset", required=True,
                   help="the dataset; a non-grouped one is copied into a grouped --name")
    p.add_argument("--mask-field", required=True, metavar="F",
                   help="a fo.Segmentation field, or fo.Detection(s) with instance masks")
    p.add_argument("--edits", nargs="+", required=True, metavar="EDIT",
                   help="size:0.1,0.08,0.05 (object pixel ratio), position, "
                        "direction:30,90 (degrees), background:random or background:IMAGE")
    p.add_argument("--seed", type=int, default=0, help="seed of the random edits (default: 0)")
    p.add_argument("--name", help="the grouped copy of a non-grouped dataset "
                                  "(default: <dataset>-edits)")
    p.add_argument("--object", metavar="LABEL",
                   help="which object: a segmentation's pixel value or mask-target label "
                        "(default: all non-zero pixels), a detection label (default: the "
                        "largest box)")
    p.add_argument("--out-dir", help="where to write the edited PNGs (default: edits/ in "
                                     "the images' common folder)")
    p.add_argument("--inpaint", choices=["telea", "ns"], default="telea",
                   help="OpenCV inpainting of the uncovered hole (default: telea)")
    p.add_argument("--skip-failed", action="store_true",
                   help="leave out edits an image does not allow instead of stopping")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a dataset called --name that is not an edited copy of --dataset")
    p.add_argument("--workers", type=int, help="editing threads (default: CPU cores, max 8)")
    add_gt_field(p)


def add_load_inputs(p) -> None:
    """``BENCHMARK``, one flag per source keyword (``--dir``, ``--hub``) and
    one per option, from the benchmarks' declared loadings (the flags' dests
    are :meth:`Benchmark.load`'s keywords; it refuses what a benchmark does
    not take)."""
    from imagenetx.benchmarks.loading import DATASET_OPTIONS, LOADINGS

    names = [b.replace("_", "-") for b in LOADINGS]
    defaults = [f"{b.replace('_', '-')}'s {lo.default_source.name}"
                for b, lo in LOADINGS.items() if lo.default_source]
    p.add_argument("benchmark", metavar="BENCHMARK",
                   help=f"one of {', '.join(names)} (or a registered benchmark that "
                        "declares its sources); with no source flag: " + ", ".join(defaults))
    sources, options = {}, {}  # keyword -> {what it is: [benchmarks]}
    for loading in LOADINGS.values():
        for source in loading.sources:
            if source.location:
                sources.setdefault(source.name, {}).setdefault(
                    source.label, []).append(loading.title)
            for option in source.options:
                options.setdefault(option.name, {}).setdefault(option, []).append(
                    loading.title)
    where = p.add_mutually_exclusive_group()
    for name, labels in sources.items():
        where.add_argument(f"--{name}", metavar=_METAVARS.get(name, name.upper()),
                           help=_per_benchmark(labels))
    for name, declared in options.items():
        choices = {o.choices for o in declared}
        p.add_argument("--" + name.replace("_", "-"),
                       type=int if next(iter(declared)).type == "int" else str,
                       choices=choices.pop() or None if len(choices) == 1 else None,
                       help=_per_benchmark({o.help: t for o, t in declared.items()}))
    for option in DATASET_OPTIONS:
        if option.type == "bool":
            p.add_argument("--" + option.name.replace("_", "-"), action="store_true",
                           help=option.help)
        else:
            p.add_argument("--" + option.name.replace("_", "-"), default=option.default,
                           help=option.help)


#: the metavar of a source flag, by keyword
_METAVARS = {"dir": "DIR", "hub": "REPO_ID"}


def _per_benchmark(texts: dict) -> str:
    """``text (benchmarks); text (benchmarks)``."""
    return "; ".join(f"{text} ({', '.join(dict.fromkeys(titles))})"
                     for text, titles in texts.items())


def _load_keywords(loadings) -> set:
    """The keywords of :meth:`Benchmark.load` that :func:`add_load_inputs`
    made flags of."""
    from imagenetx.benchmarks.loading import DATASET_OPTIONS

    return {name for lo in loadings for s in lo.sources
            for name in (s.name, *(o.name for o in (*s.options, *DATASET_OPTIONS)))}


def _opened(dataset, summary) -> int:
    print(summary)
    print(f"Open it in the App:\n  imagenetx app --dataset {dataset.name}")
    return 0


def run_demo(args) -> int:
    from imagenetx.analysis.demo import build_demo

    s = build_demo(args.name, args.overwrite, args.imagenet_dir)
    print(f"\nDataset '{s.dataset}': {s.samples:,} samples "
          f"({s.real_images:,} real images, {s.placeholders_drawn:,} "
          f"distinct placeholders drawn), {s.timing()}")
    print(s.tagging)
    print()
    print(s.label_bias.format(
        "Label bias: ImageNet's own labels scored against ReaL "
        "(top factor, prototypes left out, empty ReaL set = wrong)",
        label="factor"))
    print(f"\nOpen it in the App:\n  imagenetx app --dataset {s.dataset}\n"
          "The ImageNet-X panel opens with Correct if: ReaL and Empty ReaL sets: clean "
          "(those images left out); pick 'paper' there for this table's figures")
    return 0


def run_tag(args) -> int:
    from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset

    print(tag_dataset(args.dataset, gt_field=args.gt_field,
                      tag_prefix=args.tag_prefix, by_stem=args.by_stem,
                      require_match=True))
    return 0


def run_load(args) -> int:
    from imagenetx.benchmarks import loadable_benchmarks
    from imagenetx.benchmarks.loading import LOADINGS
    from imagenetx.errors import ImageNetXError

    known = loadable_benchmarks()
    benchmark = known.get(args.benchmark.replace("-", "_"))
    if benchmark is None:
        names = [n.replace("_", "-") for n in known]
        raise ImageNetXError(f"Unknown benchmark '{args.benchmark}' to load: use one of "
                             + ", ".join(names))
    options = {k: v for k, v in vars(args).items()
               if k in _load_keywords([*LOADINGS.values(), benchmark.loading])
               and v is not None}
    return _opened(*benchmark.load(progress=_print_progress(), **options))


def run_push(args) -> int:
    from imagenetx.present.push import push_results

    print_text(args, push_results(args.dataset, args.repo, private=args.private,
                                  with_media=args.with_media, media_roots=args.media_roots,
                                  confirm_folders=args.confirm_folders,
                                  announce=lambda plan: print(plan, flush=True)))
    return 0


def _print_progress():
    """Prints what the repo is, then the shards, images and rate, at most
    once a second and when the last shard is done."""
    import time

    last = [0.0]

    def report(p):
        now = time.monotonic()
        if p.shards_done == 0 or p.complete or now - last[0] >= 1.0:
            last[0] = now
            print(p.label, flush=True)
    return report


def run_edit(args) -> int:
    from imagenetx.edits import edit_dataset

    return _opened(*edit_dataset(
        args.dataset, args.mask_field, args.edits, seed=args.seed, name=args.name,
        object_label=args.object, out_dir=args.out_dir, inpaint=args.inpaint,
        skip_failed=args.skip_failed, overwrite=args.overwrite,
        workers=args.workers, gt_field=args.gt_field))
