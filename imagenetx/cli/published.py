"""Commands that place models among the authors' published tables:
``context``, ``spillover``, ``suite``, ``biases``."""

# lazy imports: start-up (the parser is built, and --help shown, without FiftyOne, torch or scipy)

import json
import sys

from imagenetx.cli.base import CommandGroup, csv_text, print_result, print_text
from imagenetx.cli.flags import add_analysis, add_gt_field, add_output, add_published_source, settings
from imagenetx.cli.predict import MODEL_HELP, add_model_options, add_protocol, add_runtime
from imagenetx.options import WHICH

TITLE = "published tables"


def register(group: CommandGroup) -> None:
    """Adds this module's commands."""
    p = group.add("context", run_context, "put prediction fields among published models, "
                                          "per factor (the paper's Figure 4)")
    p.add_argument("--dataset", required=True)
    p.add_argument("--pred-field", dest="pred_fields", nargs="+", required=True, metavar="F")
    p.add_argument("--group", dest="groups", nargs="+", default=["imagenet_testbed"],
                   metavar="G", help="reference groups of the authors' tables "
                   "(default: imagenet_testbed; e.g. imagenet_testbed modelvshuman)")
    p.add_argument("--results-dir", metavar="DIR",
                   help="a local copy of the authors' results/ folder (default: "
                        "$IMAGENETX_RESULTS_DIR, else downloaded and cached)")
    add_analysis(p)
    add_output(p)
    add_gt_field(p)

    p = group.add("spillover", run_spillover, "augmentation spill-over: per-factor trends "
                                              "against strength (the paper's Figure 6)",
                  database=False)
    p.add_argument("--sweep", required=True,
                   help="crop, colorjitter, gaussian_blur (or colorjitter_crop, "
                        "adaptive_colorjitter: one setting each)")
    p.add_argument("--which", choices=WHICH, default="top")
    p.add_argument("--correct", default="class", help="class (default), metaclass, real")
    p.add_argument("--method", default="spearman", help="trend test: spearman (default) or ols")
    p.add_argument("--results-dir", metavar="DIR",
                   help="a local copy of the authors' results/ folder")
    add_output(p, csv="print the trend table as CSV")

    p = group.add("suite", run_suite, "Gavrikov & Keuper's suite on one model: every "
                  "benchmark loaded (predict, probes, PGD-40), then its row among the "
                  "published models")
    p.add_argument("--model", required=True, metavar="SPEC", help=MODEL_HELP)
    p.add_argument("--field", required=True,
                   help="its prediction field on every dataset (probes: <field>_<probe>, "
                        "the attack: <field>_pgd)")
    p.add_argument("--dataset", dest="datasets", nargs="+", metavar="NAME",
                   help="the datasets to use (default: every loaded dataset of the suite's "
                        "benchmarks)")
    add_model_options(p)
    add_runtime(p)
    add_protocol(p, help="the setting every step follows (default gavrikov: their PIL "
                         "Resize 256 + CenterCrop 224, PGD-40 Linf 0.5/255 in float32; "
                         "none: the model's own preprocessing); departures are noted "
                         "beside the published columns. One that does not apply to every "
                         "dataset found is refused before the first step")
    p.add_argument("--no-probes", action="store_true",
                   help="skip the spectral and critical-band probes")
    p.add_argument("--no-attack", action="store_true", help="skip PGD-40")
    p.add_argument("--attack-n", type=int, default=1000, metavar="N",
                   help="attack at most N ImageNet val images (default 1000; 0: all)")
    p.add_argument("--overwrite", action="store_true",
                   help="redo every step's results (another model, other prompts or "
                        "weights in the same --field)")
    add_published_source(p)
    add_output(p, csv="print the comparison's rows as CSV")

    p = group.add("protocols", run_protocols, "the papers' settings by name, what each "
                  "pins and the authors' line each pin comes from (--protocol NAME)",
                  database=False)
    p.add_argument("name", nargs="?", help="show only this protocol")
    add_output(p, csv="print one row per protocol and pin")

    p = group.add("biases", run_biases, "your models among Gavrikov & Keuper's published "
                                        "ones: each bias against each generalization measure")
    p.add_argument("--dataset", dest="datasets", nargs="+", default=[], metavar="NAME",
                   help="datasets to measure --pred-field on: cue-conflict (shape bias), "
                        "ImageNet-X (ImageNet accuracy), ImageNet-A/R/Sketch/V2/C")
    p.add_argument("--pred-field", dest="pred_fields", nargs="+", default=[], metavar="F",
                   help="the prediction fields measured on --dataset (one model each)")
    p.add_argument("--value", dest="values", nargs="+", default=[], metavar="MODEL:NAME=VALUE",
                   help="a value measured elsewhere, e.g. lite0:spectral-bias=0.02 or "
                        "lite0:metric/criticalband/bw_norm=4.2 (table units: accuracy in %%)")
    p.add_argument("--bias", dest="biases", nargs="+", metavar="NAME",
                   help="shape-bias, spectral-bias, critical-band-bw, critical-band-cf, "
                        "critical-band-pns (default: these five), lpp, hpp, or a column")
    p.add_argument("--measure", dest="measures", nargs="+", metavar="NAME",
                   help="imagenet, imagenet-a, imagenet-r, imagenet-v2, imagenet-sketch, "
                        "imagenet-c (default: these six), id, robustness, concepts, "
                        "adversarial, or a column of benchmark.csv")
    add_published_source(p)
    p.add_argument("--out", metavar="HTML", help="also write the HTML report and its CSV")
    add_output(p, csv="print one row per bias, measure and model")


def run_context(args) -> int:
    from imagenetx.analysis.context import reference_cloud
    from imagenetx.present.formatting import context_csv, format_context

    result = reference_cloud(args.dataset, args.pred_fields, args.groups,
                             results_dir=args.results_dir,
                             **settings(args)).to_dict()
    return print_result(args, result, format_context, context_csv)


def run_spillover(args) -> int:
    from imagenetx.analysis.spillover import spillover
    from imagenetx.present.formatting import format_spillover, spillover_csv

    result = spillover(args.sweep, args.which, args.correct, args.method,
                       results_dir=args.results_dir).to_dict()
    return print_result(args, result, format_spillover, spillover_csv)


def run_suite(args) -> int:
    from imagenetx.analysis.suite import run_suite as suite
    from imagenetx.models.config import from_args
    from imagenetx.present.biases import format_biases

    request, options = from_args(args)
    quiet = args.json or args.csv
    result = suite(args.model, args.field, args.datasets, request, options,
                   probes=not args.no_probes, attack=not args.no_attack,
                   attack_n=args.attack_n or None, published_dir=args.published_dir,
                   population=args.published_models,
                   say=lambda line: print_text(args, line, sys.stderr if quiet else None))
    if args.json:
        print(json.dumps(result.to_dict(), default=str))
        return 0
    if args.csv:
        print(csv_text(result.comparison.rows()), end="")
        return 0
    print()
    print(format_biases(result.comparison.to_dict()))
    return 0


def run_biases(args) -> int:
    from imagenetx.analysis.biases import collect_values, compare_biases, parse_values
    from imagenetx.benchmarks.cue_conflict.published import (
        DEFAULT_BIASES,
        DEFAULT_MEASURES,
        load_published,
    )
    from imagenetx.present.biases import check_out, format_biases, write_bias_report

    # bad tables, names and paths fail before anything is measured
    if args.out:
        check_out(args.out)
    published = load_published(args.published_dir)
    biases, measures = args.biases or DEFAULT_BIASES, args.measures or DEFAULT_MEASURES
    for name in (*biases, *measures):
        published.describe(name)
    values, notes = collect_values(parse_values(args.values), args.datasets,
                                   args.pred_fields)
    comparison = compare_biases(values, biases, measures, args.published_models,
                                published=published, notes=notes)
    if args.out:
        for path in write_bias_report(comparison, args.out):
            print(f"wrote {path}", file=sys.stderr)
    return print_result(args, comparison.to_dict(), format_biases,
                        lambda r: csv_text(comparison.rows()))


def run_protocols(args) -> int:
    from imagenetx.present.protocols import format_protocols, protocols_csv, protocols_table

    return print_result(args, protocols_table(args.name), format_protocols, protocols_csv)
