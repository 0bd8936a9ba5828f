"""The ``report`` command: an HTML report of a dataset's prediction fields."""

# lazy imports: start-up (the parser is built, and --help shown, without FiftyOne, torch or scipy)

from imagenetx.cli.base import CommandGroup
from imagenetx.cli.flags import add_analysis, add_gt_field, settings

TITLE = "report"


def register(group: CommandGroup) -> None:
    """Adds this module's commands."""
    p = group.add("report", run_report, "write an HTML report of error ratios, tables as CSV")
    p.add_argument("--dataset", required=True)
    p.add_argument("--pred-field", dest="pred_fields", nargs="+", required=True, metavar="F")
    p.add_argument("--out", required=True, help="the HTML page, e.g. report.html")
    p.add_argument("--context-group", dest="context_groups", nargs="+", metavar="G",
                   help="add Figure 4: the models among these published groups "
                        "(e.g. imagenet_testbed)")
    p.add_argument("--results-dir", metavar="DIR",
                   help="a local copy of the authors' results/ folder")
    p.add_argument("--discover", action="store_true",
                   help="add the slices `imagenetx discover` finds for each field")
    p.add_argument("--shift", dest="shifts", action="append", metavar="KEY=DATASET",
                   help="add effective robustness and calibration under shift: a shift "
                        "(imagenet-v2, imagenet-sketch, imagenet-a, imagenet-r, imagenet-c) and "
                        "its dataset, repeatable (the report's dataset is ImageNet val)")
    add_analysis(p)
    add_gt_field(p)


def run_report(args) -> int:
    from imagenetx.present.report import write_report

    print(write_report(args.dataset, args.pred_fields, args.out,
                       context_groups=args.context_groups,
                       results_dir=args.results_dir, discover=args.discover,
                       shifts=args.shifts,
                       **settings(args)))
    return 0
