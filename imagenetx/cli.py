"""The ``imagenetx`` command: a thin layer over the library."""

import argparse
import os
import sys


def _add_common(p):
    p.add_argument("--gt-field", default="ground_truth",
                   help="ground truth fo.Classification field (default: ground_truth)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="imagenetx",
        description="ImageNet-X factors of variation on FiftyOne datasets.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="build the offline demo dataset (48,868 val images)")
    p.add_argument("--name", default="imagenet-x-demo")
    p.add_argument("--overwrite", action="store_true", help="replace an existing dataset")
    p.add_argument("--imagenet-dir", help="use the real images of this ImageNet val folder")

    p = sub.add_parser("tag", help="attach ImageNet-X to an existing dataset by file name")
    p.add_argument("--dataset", required=True)
    p.add_argument("--tag-prefix", default="x:")
    _add_common(p)

    p = sub.add_parser("load", help="build a dataset from a local folder or the Hub, then tag it")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--imagenet-dir", help="a local ImageNet folder")
    src.add_argument("--hub", metavar="REPO_ID", help="a Hugging Face Hub dataset, ORG/NAME")
    p.add_argument("--split", help="val or train (folder); the repo split (Hub)")
    p.add_argument("--max-samples", type=int, help="Hub only: load at most N samples")
    p.add_argument("--name", help="dataset name")
    p.add_argument("--overwrite", action="store_true", help="replace an existing dataset")
    _add_common(p)

    p = sub.add_parser("app", help="open the FiftyOne App with this plugin")
    p.add_argument("--dataset", required=True)
    p.add_argument("--port", type=int)
    p.add_argument("--remote", action="store_true", help="serve without opening a browser")

    p = sub.add_parser("plugin", help="make this checkout visible to FiftyOne as a plugin")
    p.add_argument("action", choices=["install"])
    return parser


def main(argv=None) -> int:
    """Runs the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    os.environ.setdefault("FIFTYONE_DATABASE_VALIDATION", "false")

    from imagenetx.errors import ImageNetXError

    try:
        return _run(args)
    except ImageNetXError as e:
        print(f"imagenetx {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _run(args) -> int:
    if args.command == "demo":
        from imagenetx.demo import build_demo

        s = build_demo(args.name, args.overwrite, args.imagenet_dir)
        print(f"\nDataset '{s.dataset}': {s.samples:,} samples "
              f"({s.real_images:,} real images, {s.placeholders_drawn:,} "
              f"distinct placeholders drawn), {s.timing()}")
        print(s.tagging)
        print()
        print(s.label_bias.format(
            "Label bias: ImageNet's own labels scored against ReaL "
            "(top factor, prototypes left out, empty ReaL set = wrong)"))
        print(f"\nOpen it in the App:\n  imagenetx app --dataset {s.dataset}")
        return 0

    if args.command == "tag":
        from imagenetx.tagging import tag_dataset

        print(tag_dataset(args.dataset, gt_field=args.gt_field,
                          tag_prefix=args.tag_prefix))
        return 0

    if args.command == "load":
        from imagenetx import sources

        if args.imagenet_dir:
            if args.max_samples is not None:
                from imagenetx.errors import ImageNetXError

                raise ImageNetXError("--max-samples applies to --hub only")
            dataset, summary = sources.load_imagenet_dir(
                args.imagenet_dir, split=args.split or "val", name=args.name,
                overwrite=args.overwrite, gt_field=args.gt_field)
        else:
            dataset, summary = sources.load_hub_dataset(
                args.hub, split=args.split, max_samples=args.max_samples,
                name=args.name, overwrite=args.overwrite,
                gt_field=args.gt_field)
        print(summary)
        print(f"Open it in the App:\n  imagenetx app --dataset {dataset.name}")
        return 0

    if args.command == "app":
        from imagenetx.plugin import launch_app

        launch_app(args.dataset, port=args.port, remote=args.remote)
        return 0

    if args.command == "plugin":
        from imagenetx.plugin import install_plugin

        print(f"Plugin linked at {install_plugin()}")
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
