"""Commands that build or change datasets: ``demo``, ``tag``, ``load``, ``edit``."""

# lazy imports: start-up (the parser is built, and --help shown, without FiftyOne, torch or scipy)

from imagenetx.cli.base import CommandGroup
from imagenetx.cli.flags import add_gt_field
from imagenetx.options import V2_VARIANTS

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

    p = group.add("load", run_load, "build a dataset from a local folder or the Hub, then tag "
                                    "it (ImageNet-D, cue-conflict: their own contracts)")
    p.add_argument("benchmark", nargs="?", choices=["cue-conflict"],
                   help="cue-conflict: the 1,280 texture-shape stimuli (from --dir, "
                        "$IMAGENETX_CUE_CONFLICT_DIR, or downloaded into the cache)")
    p.add_argument("--dir", help="cue-conflict: a local copy of the stimuli folder")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--imagenet-dir", help="a local ImageNet folder")
    src.add_argument("--hub", metavar="REPO_ID",
                     help="a Hugging Face Hub dataset, ORG/NAME: ImageNet's parquet or "
                          "webdataset shards (ILSVRC/imagenet-1k, timm/imagenet-1k-wds), or "
                          "a FiftyOne-format repo (ImageNet-D repos are converted)")
    src.add_argument("--imagenet-d-dir", metavar="DIR",
                     help="the ImageNet-D release folder (background/, texture/, material/)")
    src.add_argument("--imagenet-e-dir", metavar="DIR",
                     help="the ImageNet-E release folder (labels.txt, ori/, 20_adv/, 01/, "
                          "...): a grouped dataset, one group per source image")
    _add_ood_sources(src)
    p.add_argument("--variant", choices=V2_VARIANTS,
                   help="--imagenetv2-dir: the variant of a folder whose name does not say "
                        "it, or the one variant to read of several")
    p.add_argument("--split", help="val or train (folder, ImageNet on the Hub: default val); "
                                    "the repo split (FiftyOne-format Hub repo)")
    p.add_argument("--max-samples", type=int, help="Hub only: load at most N samples "
                                                   "(ImageNet shards: only the shards they need)")
    p.add_argument("--workers", type=int, help="Hub ImageNet shards: shards downloaded at "
                                               "once (default: 4; parquet: at most one per "
                                               "CPU core is read at a time, tars: one)")
    p.add_argument("--revision", metavar="REV",
                   help="--hub: the branch, tag or commit to pull (default: the main "
                        "branch, resolved to its commit when the pull starts)")
    p.add_argument("--media-from", metavar="REPO_ID",
                   help="--hub of a pushed copy without its gated images: pull them from "
                        "this ImageNet repo (ILSVRC/imagenet-1k) and re-attach them by "
                        "file name")
    p.add_argument("--name", help="dataset name")
    p.add_argument("--overwrite", action="store_true", help="replace an existing dataset")
    add_gt_field(p)

    p = group.add("push", run_push, "share a dataset with its prediction fields and "
                                    "evaluations on the Hugging Face Hub (FiftyOne's "
                                    "push_to_hub, a card with the error-ratio table)")
    p.add_argument("--dataset", required=True)
    p.add_argument("--repo", required=True, metavar="USER/NAME",
                   help="the new dataset repo, in your token's namespace")
    p.add_argument("--private", action="store_true", help="make the new repo private")
    p.add_argument("--with-media", action="store_true",
                   help="upload images pulled from a gated repo too (default: 1-pixel "
                        "stand-ins, re-attached with load --hub REPO --media-from SOURCE)")
    p.add_argument("--allow-media-outside", nargs="+", default=[], metavar="FOLDER",
                   help="upload these folders' files too, though they lie outside the "
                        "folders a dataset from the Hub got its media from (refused by "
                        "default: a repo may name files such as /etc/passwd)")

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


def _add_ood_sources(group):
    """``--imagenet-a-dir DIR`` ... one per OOD release layout."""
    from imagenetx.benchmarks.ood.layouts import LAYOUTS

    for layout in LAYOUTS.values():
        group.add_argument(layout.option, metavar="DIR", dest=f"ood_{layout.kind}",
                           help=f"the {layout.title} release folder, {layout.folders}")


def _ood_source(args):
    """``(kind, folder)`` of the OOD option given, else None."""
    from imagenetx.benchmarks.ood.layouts import LAYOUTS

    given = [(k, getattr(args, f"ood_{k}")) for k in LAYOUTS
             if getattr(args, f"ood_{k}", None) is not None]
    return given[0] if given else None


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
    from imagenetx.benchmarks.imagenet_x import sources
    from imagenetx.errors import ImageNetXError

    ood = _ood_source(args)
    sources_given = [args.benchmark, args.imagenet_dir, args.hub, args.imagenet_d_dir,
                     args.imagenet_e_dir, ood]
    if sum(x is not None for x in sources_given) != 1:
        raise ImageNetXError(
            "Name one source: cue-conflict, --imagenet-dir DIR, --hub REPO_ID, "
            "--imagenet-d-dir DIR, --imagenet-e-dir DIR or an OOD release folder "
            "(--imagenet-a-dir, --imagenet-r-dir, --imagenet-sketch-dir, --imagenetv2-dir, "
            "--imagenet-c-dir, --imagenet-cbar-dir)")
    if (args.workers is not None or args.media_from or args.revision) and not args.hub:
        raise ImageNetXError("--workers, --revision and --media-from apply to --hub only")
    if args.dir and not args.benchmark:
        raise ImageNetXError("--dir applies to `load cue-conflict` only")
    if args.variant and not (ood and ood[0] == "v2"):
        raise ImageNetXError("--variant applies to --imagenetv2-dir only")
    if ood:
        from imagenetx.benchmarks.ood import load_ood_dir

        if args.max_samples is not None or args.split:
            raise ImageNetXError(
                "--split and --max-samples do not apply to OOD release folders")
        return _opened(*load_ood_dir(
            ood[0], ood[1], name=args.name, overwrite=args.overwrite,
            gt_field=args.gt_field, variant=args.variant))
    if args.benchmark == "cue-conflict":
        from imagenetx.benchmarks.cue_conflict import load_cue_conflict

        if args.max_samples is not None or args.split:
            raise ImageNetXError(
                "--split and --max-samples do not apply to cue-conflict")
        return _opened(*load_cue_conflict(
            args.dir, name=args.name, overwrite=args.overwrite, gt_field=args.gt_field))
    if args.imagenet_e_dir:
        from imagenetx.benchmarks.imagenet_e import load_imagenet_e

        if args.max_samples is not None or args.split:
            raise ImageNetXError(
                "--split and --max-samples do not apply to --imagenet-e-dir")
        return _opened(*load_imagenet_e(
            args.imagenet_e_dir, name=args.name, overwrite=args.overwrite,
            gt_field=args.gt_field))
    if args.imagenet_d_dir:
        from imagenetx.benchmarks.imagenet_d import load_imagenet_d_dir

        if args.max_samples is not None or args.split:
            raise ImageNetXError(
                "--split and --max-samples do not apply to --imagenet-d-dir")
        return _opened(*load_imagenet_d_dir(
            args.imagenet_d_dir, name=args.name, overwrite=args.overwrite,
            gt_field=args.gt_field))
    if args.imagenet_dir:
        if args.max_samples is not None:
            raise ImageNetXError("--max-samples applies to --hub only")
        return _opened(*sources.load_imagenet_dir(
            args.imagenet_dir, split=args.split or "val", name=args.name,
            overwrite=args.overwrite, gt_field=args.gt_field))
    if args.media_from:  # a media repo it cannot read is said before anything is loaded
        from imagenetx.benchmarks.imagenet_x.hub_pull import media_repo

        media_repo(args.media_from)
    dataset, summary = sources.load_hub_dataset(
        args.hub, split=args.split, max_samples=args.max_samples,
        name=args.name, overwrite=args.overwrite, gt_field=args.gt_field,
        workers=args.workers, progress=_print_progress(), revision=args.revision)
    if args.media_from:
        from imagenetx.benchmarks.imagenet_x.hub_pull import reattach_media

        try:
            n = reattach_media(dataset, args.media_from, workers=args.workers,
                               progress=_print_progress())
        except ImageNetXError as e:
            name = dataset.name
            if args.overwrite:  # it replaced a dataset: keep what was loaded
                raise ImageNetXError(f"{e} (dataset '{name}' kept with its stand-in "
                                     "images)") from None
            dataset.delete()  # a new dataset of stand-ins is not what was asked
            raise ImageNetXError(f"{e} (dataset '{name}' not kept)") from None
        print(f"{n:,} of {len(dataset):,} samples re-attached to the images of "
              f"'{args.media_from}'" + (f"; {len(dataset) - n:,} keep their stand-ins "
                                        "(not in that repo)" if n < len(dataset) else ""))
    return _opened(dataset, summary)


def run_push(args) -> int:
    from imagenetx.present.push import push_results

    print(push_results(args.dataset, args.repo, private=args.private,
                       with_media=args.with_media,
                       allow_media_outside=args.allow_media_outside,
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
