"""The flags several commands share, each defined once, and the readers
that turn them into the library's keywords."""

# lazy imports: start-up (the parser is built, and --help shown, without FiftyOne, torch or scipy)

from imagenetx.options import REAL_MODES


def add_gt_field(p):
    """``--gt-field``."""
    p.add_argument("--gt-field", default="ground_truth",
                   help="ground truth fo.Classification field (default: ground_truth)")


def add_output(p, csv: str = "print long-format CSV"):
    """``--json`` or ``--csv`` (what :func:`~imagenetx.cli.base.print_result` reads)."""
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print one JSON object")
    fmt.add_argument("--csv", action="store_true", help=csv)


def add_no_intervals(p):
    """``--no-intervals``."""
    p.add_argument("--no-intervals", action="store_true", help="skip the bootstrap intervals")


def add_published_source(p, prefix: str = ""):
    """Which of Gavrikov & Keuper's published models, and where their tables are."""
    p.add_argument("--published-models", choices=["all", "resnet50"], default="all",
                   help=f"{prefix}all 70 published models (default) or the paper's 48 "
                        "ResNet-50s")
    p.add_argument("--published-dir", metavar="DIR",
                   help=f"{prefix}a folder with benchmark.csv and r50_categories.json "
                        "(default: $IMAGENETX_GAVRIKOV_DIR, else downloaded into the cache)")


def add_analysis(p):
    """The analysis settings (:class:`imagenetx.analysis.Settings`): what to
    slice by, plus :func:`add_scoring`'s."""
    p.add_argument("--slicing", metavar="NAME",
                   help="what to slice by: a slicing of the dataset's benchmark (ImageNet-X: "
                        "top_factor (default), factors, metaclass, class; ImageNet-D: "
                        "nuisance (default), nuisance_value, class; ImageNet-A/R/Sketch: "
                        "class; ImageNetV2: variant, class; ImageNet-C: corruption "
                        "(default), severity, class) or any categorical field, e.g. tags")
    add_scoring(p)
    p.add_argument("--by", metavar="SLICING",
                   help="add a group x slice table per model, e.g. --by metaclass")


def add_scoring(p):
    """The settings of what counts as correct and which images count."""
    p.add_argument("--correct", metavar="NAME",
                   help="correctness, a label space of the benchmark: ImageNet-X: class "
                        "(default), metaclass, real; ImageNet-D: class (any of its "
                        "ImageNet-1k indices); ImageNet-A/R: subset (default: argmax over "
                        "their 200 classes), class")
    p.add_argument("--real-mode", choices=REAL_MODES, default="clean",
                   help="--correct real: leave out images with an empty ReaL set (clean, "
                        "default) or count them wrong like the original toolkit (paper)")
    p.add_argument("--within", metavar="SLICING=VALUE",
                   help="only the images of one slice, e.g. metaclass=dog")
    p.add_argument("--include-prototypes", action="store_true",
                   help="ImageNet-X: keep the 3,000 prototype images the paper leaves out")


def settings(args) -> dict:
    """The analysis keywords of :func:`add_analysis`'s (or
    :func:`add_scoring`'s) flags plus ``--gt-field``."""
    from imagenetx.errors import ImageNetXError

    within = None
    if args.within:
        key, sep, value = args.within.partition("=")
        if not sep or not key or not value:
            raise ImageNetXError(
                f"--within '{args.within}' is not SLICING=VALUE: write e.g. "
                "--within metaclass=dog")
        within = (key, value)
    out = dict(correct=args.correct, real_mode=args.real_mode,
               include_prototypes=args.include_prototypes,
               gt_field=args.gt_field, within=within)
    if not hasattr(args, "slicing"):  # add_scoring only
        return out
    return dict(out, slicing=args.slicing, by=args.by)
