"""The ``imagenetx`` command: a thin layer over the library."""

import argparse
import os
import sys

from imagenetx.options import (
    AMPS,
    DISCOVERY_ALPHA as ALPHA,
    DISCOVERY_MAX_ORDER as MAX_ORDER,
    DISCOVERY_MIN_SUPPORT as MIN_SUPPORT,
    DISCOVERY_SCORES as SCORES,
    DISCOVERY_TOP_K as TOP_K,
    REAL_MODES,
    ROW_ORDERS,
    V2_VARIANTS,
    WHICH,
)


def _add_common(p):
    p.add_argument("--gt-field", default="ground_truth",
                   help="ground truth fo.Classification field (default: ground_truth)")


def _add_output(p, csv: str = "print long-format CSV"):
    """``--json`` or ``--csv`` (what :func:`_print_result` reads)."""
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print one JSON object")
    fmt.add_argument("--csv", action="store_true", help=csv)


def _add_probe_model(p):
    """The model options of ``imagenetx probe`` (as ``predict``'s)."""
    p.add_argument("--dataset", required=True)
    p.add_argument("--model", required=True, metavar="SPEC",
                   help="timm:NAME, torchvision:NAME[:WEIGHTS] or checkpoint:PATH")
    p.add_argument("--field", required=True,
                   help="the model's prediction field name; results go to <field>_<probe>")
    p.add_argument("--arch", help="architecture of a checkpoint: a timm name or torchvision:NAME")
    p.add_argument("--remap-by-position", action="store_true",
                   help="checkpoint only: load tensors by position (see predict)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--num-workers", type=int, help="image decoding processes (default: CPU cores, max 8)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda[:N] (default: auto)")
    p.add_argument("--amp", default="auto", choices=AMPS,
                   help="autocast dtype (default: bf16 on CUDA, off on CPU)")
    p.add_argument("--limit", type=int, help="probe at most N samples")
    p.add_argument("--overwrite", action="store_true",
                   help="rerun the levels on every sample (also: another model into the field)")


def _add_corruptions(p):
    """``--corruption NAME[:SEVERITY] ...`` / ``--corruptions all``."""
    p.add_argument("--corruption", dest="corruption", nargs="+", metavar="NAME[:SEVERITY]",
                   help="ImageNet-C corruptions applied on the fly, e.g. fog:3 or snow (all 5 "
                        "severities); results go to <field>_corruption")
    p.add_argument("--corruptions", choices=["all"],
                   help="all: the 15 corruptions x 5 severities")


def _corruption_specs(args):
    """The corruption specs of ``--corruption`` / ``--corruptions``, or None."""
    from imagenetx.errors import ImageNetXError

    if args.corruption and args.corruptions:
        raise ImageNetXError("Pass --corruption NAME[:SEVERITY] ... or --corruptions all, not both")
    if args.corruptions:
        return ["all"]
    return args.corruption or None


def _run_probe(args, probe) -> int:
    """Runs a probe from parsed arguments; prints its summary and table."""
    from imagenetx.analysis.probes import probe_results
    from imagenetx.present.probes import format_probe
    from imagenetx.probes.run import run_probe

    levels = getattr(args, "levels", None)
    print(run_probe(args.dataset, args.model, args.field, probe, levels=levels,
                    arch=args.arch, batch_size=args.batch_size,
                    num_workers=args.num_workers, device=args.device, amp=args.amp,
                    limit=args.limit, overwrite=args.overwrite,
                    pretrained=not getattr(args, "random_weights", False),
                    remap_by_position=args.remap_by_position))
    from imagenetx.errors import ImageNetXError

    try:
        result = probe_results(args.dataset, args.field, probe.name, gt_field=args.gt_field)
    except ImageNetXError as e:  # stored, but nothing to score against
        print(f"\nNo accuracy table: {e}")
        return 0
    print()
    print(format_probe(result.to_dict()))
    return 0


def _add_published_source(p, prefix: str = ""):
    """Which of Gavrikov & Keuper's published models, and where their tables are."""
    p.add_argument("--published-models", choices=["all", "resnet50"], default="all",
                   help=f"{prefix}all 70 published models (default) or the paper's 48 "
                        "ResNet-50s")
    p.add_argument("--published-dir", metavar="DIR",
                   help=f"{prefix}a folder with benchmark.csv and r50_categories.json "
                        "(default: $IMAGENETX_GAVRIKOV_DIR, else downloaded into the cache)")


def _add_analysis(p):
    """The analysis settings (:class:`imagenetx.analysis.Settings`)."""
    p.add_argument("--slicing", metavar="NAME",
                   help="what to slice by: a slicing of the dataset's benchmark (ImageNet-X: "
                        "top_factor (default), factors, metaclass, class; ImageNet-D: "
                        "nuisance (default), nuisance_value, class; ImageNet-A/R/Sketch: "
                        "class; ImageNetV2: variant, class; ImageNet-C: corruption "
                        "(default), severity, class) or any categorical field, e.g. tags")
    p.add_argument("--which", choices=WHICH,
                   help="ImageNet-X: count images under their top factor (--slicing "
                        "top_factor) or all their factors (--slicing factors)")
    _add_scoring(p)
    p.add_argument("--by", metavar="SLICING",
                   help="add a group x slice table per model, e.g. --by metaclass")
    p.add_argument("--by-metaclass", action="store_true", help="same as --by metaclass")


def _add_scoring(p):
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
    p.add_argument("--metaclass", help="ImageNet-X: only this meta-class (--within metaclass=M)")
    p.add_argument("--include-prototypes", action="store_true",
                   help="ImageNet-X: keep the 3,000 prototype images the paper leaves out")


def _settings(args) -> dict:
    """The analysis keywords of parsed arguments."""
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
               gt_field=args.gt_field, within=within, metaclass=args.metaclass)
    if not hasattr(args, "which"):  # _add_scoring only
        return out
    if args.slicing and args.which:
        raise ImageNetXError("Pass --slicing or --which, not both")
    return dict(out, slicing=args.slicing, which=args.which,
                by="metaclass" if args.by_metaclass else args.by)


def _print_result(args, result: dict, text, csv=None) -> int:
    """Prints a result dict as one JSON object (``--json``), CSV
    (``--csv``, with ``csv(result)``) or text (``text(result)``)."""
    import json

    if getattr(args, "json", False):
        print(json.dumps(result, allow_nan=False))
    elif getattr(args, "csv", False):
        sys.stdout.write(csv(result))
    else:
        print(text(result))
    return 0


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


def _csv_text(rows: list) -> str:
    import csv
    import io

    buffer = io.StringIO()
    if rows:
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return buffer.getvalue()


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
    p.add_argument("--by-stem", action="store_true",
                   help="match by file stem whatever the extension (edited copies of val "
                        "images, ILSVRC2012_val_XXXXXXXX.png)")
    _add_common(p)

    p = sub.add_parser("load", help="build a dataset from a local folder or the Hub, then tag it "
                                    "(ImageNet-D, cue-conflict: their own contracts)")
    p.add_argument("benchmark", nargs="?", choices=["cue-conflict"],
                   help="cue-conflict: the 1,280 texture-shape stimuli (from --dir, "
                        "$IMAGENETX_CUE_CONFLICT_DIR, or downloaded into the cache)")
    p.add_argument("--dir", help="cue-conflict: a local copy of the stimuli folder")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--imagenet-dir", help="a local ImageNet folder")
    src.add_argument("--hub", metavar="REPO_ID",
                     help="a Hugging Face Hub dataset, ORG/NAME (ImageNet-D repos are converted)")
    src.add_argument("--imagenet-d-dir", metavar="DIR",
                     help="the ImageNet-D release folder (background/, texture/, material/)")
    src.add_argument("--imagenet-e-dir", metavar="DIR",
                     help="the ImageNet-E release folder (labels.txt, ori/, 20_adv/, 01/, "
                          "...): a grouped dataset, one group per source image")
    _add_ood_sources(src)
    p.add_argument("--variant", choices=V2_VARIANTS,
                   help="--imagenetv2-dir: the variant of a folder whose name does not say "
                        "it, or the one variant to read of several")
    p.add_argument("--split", help="val or train (folder); the repo split (Hub)")
    p.add_argument("--max-samples", type=int, help="Hub only: load at most N samples")
    p.add_argument("--name", help="dataset name")
    p.add_argument("--overwrite", action="store_true", help="replace an existing dataset")
    _add_common(p)

    p = sub.add_parser("edit", help="edit the masked objects of a dataset (size, position, "
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
    _add_common(p)

    p = sub.add_parser("predict", help="run an ImageNet classifier, write and evaluate predictions")
    p.add_argument("--dataset", required=True)
    p.add_argument("--model", required=True, metavar="SPEC",
                   help="timm:NAME, torchvision:NAME[:WEIGHTS] or checkpoint:PATH")
    p.add_argument("--field", required=True, help="prediction field to write")
    p.add_argument("--arch", help="architecture of a checkpoint: a timm name or torchvision:NAME")
    p.add_argument("--remap-by-position", action="store_true",
                   help="checkpoint only: when its key names differ from --arch's but its "
                        "tensors line up one to one in order and shape, load them by position")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--num-workers", type=int, help="image decoding processes (default: CPU cores, max 8)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda[:N] (default: auto)")
    p.add_argument("--amp", default="auto", choices=AMPS,
                   help="autocast dtype (default: bf16 on CUDA, off on CPU)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--logits", action="store_true", help="also store the 1000 logits")
    p.add_argument("--limit", type=int, help="predict at most N samples")
    p.add_argument("--overwrite", action="store_true", help="predict samples that already have a prediction too")
    p.add_argument("--random-weights", action="store_true",
                   help="skip the pretrained weights (throughput tests only)")
    p.add_argument("--slices", metavar="A,B",
                   help="grouped datasets: predict only these group slices (default: all)")
    _add_corruptions(p)
    _add_common(p)

    p = sub.add_parser("probe", help="predict under every level of a probe (band-pass filters, "
                                     "corruptions, ...), resumable; print accuracy per level")
    p.add_argument("probe", choices=["spectral", "corruption", "critical_band"])
    _add_probe_model(p)
    p.add_argument("--level", dest="levels", nargs="+", metavar="KEY",
                   help="run only these levels, e.g. low:0.1 high:0.5 (default: all)")
    _add_corruptions(p)
    _add_common(p)

    p = sub.add_parser("probe-results", help="accuracy per probe level; spectral bias; "
                                             "corruption errors, CE, mCE, relative mCE")
    p.add_argument("--dataset", required=True)
    p.add_argument("--field", required=True, help="the prediction field the probe ran for")
    p.add_argument("--probe", required=True, choices=["spectral", "corruption", "critical_band"])
    _add_output(p, csv="print one CSV row per level")
    _add_common(p)

    p = sub.add_parser("corruption-errors",
                       help="ImageNet-C (released folders): top-1 error per corruption and "
                            "severity, CE and mCE against AlexNet, relative mCE")
    p.add_argument("--dataset", required=True, help="a dataset loaded with --imagenet-c-dir")
    p.add_argument("--pred-field", required=True, metavar="F")
    clean = p.add_mutually_exclusive_group()
    clean.add_argument("--clean-dataset", metavar="NAME",
                       help="the clean images (ImageNet val) with the same prediction field, "
                            "for the relative CE and mCE")
    clean.add_argument("--clean-accuracy", type=float, metavar="A",
                       help="the clean top-1 accuracy as a fraction, e.g. 0.76")
    _add_output(p, csv="print one CSV row per corruption and severity")
    _add_common(p)

    p = sub.add_parser("import-predictions",
                       help="write a model's predictions from a toolkit CSV or testbed pickle, "
                            "or published cue-conflict responses")
    p.add_argument("--dataset", required=True)
    p.add_argument("--file", required=True, nargs="+",
                   help="CSV (file_name,predicted_class,predicted_probability) or logits "
                        "pickle; or one or more model-vs-human responses CSVs (subj,session,"
                        "trial,rt,object_response,category,condition,imagename)")
    p.add_argument("--field", help="fo.Classification field to write (responses: default "
                                   "one field per subject, named after it)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing prediction field")
    p.add_argument("--row-order", choices=ROW_ORDERS, default="toolkit",
                   help="pickles without file names: rows in the imagenet_x toolkit's "
                        "order (default) or in file-number order")
    _add_common(p)

    p = sub.add_parser("ratios", help="per-slice accuracy and error ratios of prediction fields")
    p.add_argument("--dataset", required=True)
    p.add_argument("--pred-field", dest="pred_fields", nargs="+", required=True, metavar="F",
                   help="one or more fo.Classification prediction fields")
    _add_analysis(p)
    p.add_argument("--no-intervals", action="store_true", help="skip the bootstrap intervals")
    _add_output(p)
    _add_common(p)

    p = sub.add_parser("discover", help="find conjunctions of slices where a model errs most "
                                        "above its average")
    p.add_argument("--dataset", required=True)
    p.add_argument("--pred-field", required=True, metavar="F",
                   help="the fo.Classification prediction field")
    p.add_argument("--slicing", dest="slicings", nargs="+", metavar="NAME",
                   help="the slicings to intersect (default, ImageNet-X: factors metaclass "
                        "class; ImageNet-D: nuisance class), or categorical fields, e.g. tags")
    p.add_argument("--max-order", type=int, default=MAX_ORDER,
                   help=f"the most slices a conjunction intersects (default: {MAX_ORDER})")
    p.add_argument("--min-support", type=int, default=MIN_SUPPORT,
                   help=f"the fewest images a slice holds (default: {MIN_SUPPORT})")
    p.add_argument("--top", type=int, default=TOP_K,
                   help=f"how many slices to report (default: {TOP_K})")
    p.add_argument("--score", choices=SCORES, default="bound",
                   help="bound: Bonferroni lower bound on the error ratio (default); "
                        "sliceline: SliceLine's score with --alpha")
    p.add_argument("--alpha", type=float, default=ALPHA,
                   help=f"SliceLine's error/size trade-off (default: {ALPHA})")
    _add_scoring(p)
    p.add_argument("--no-intervals", action="store_true", help="skip the bootstrap intervals")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_common(p)

    p = sub.add_parser("shape-bias", help="shape bias of 16-class decisions on a cue-conflict "
                                          "dataset, beside the published humans")
    p.add_argument("--dataset", required=True)
    p.add_argument("--pred-field", dest="pred_fields", nargs="+", required=True, metavar="F")
    p.add_argument("--no-humans", action="store_true",
                   help="leave out the pooled human observers of the dataset")
    p.add_argument("--no-intervals", action="store_true", help="skip the bootstrap intervals")
    p.add_argument("--published", action="store_true",
                   help="also place the shape biases among Gavrikov & Keuper's 70 published "
                        "models: Kendall's tau of shape bias and each --measure, and each "
                        "field's rank (JSON: a \"published\" key)")
    p.add_argument("--measure", dest="measures", nargs="+", metavar="NAME",
                   help="--published: imagenet, imagenet-a, imagenet-r, imagenet-v2, "
                        "imagenet-sketch, imagenet-c (default: these six), id, robustness, "
                        "concepts, adversarial, or any column of benchmark.csv")
    _add_published_source(p, "--published: ")
    _add_output(p)

    p = sub.add_parser("biases", help="your models among Gavrikov & Keuper's published ones: "
                                      "each bias against each generalization measure")
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
    _add_published_source(p)
    p.add_argument("--out", metavar="HTML", help="also write the HTML report and its CSV")
    _add_output(p, csv="print one row per bias, measure and model")

    p = sub.add_parser("context", help="put prediction fields among published models, "
                                       "per factor (the paper's Figure 4)")
    p.add_argument("--dataset", required=True)
    p.add_argument("--pred-field", dest="pred_fields", nargs="+", required=True, metavar="F")
    p.add_argument("--group", dest="groups", nargs="+", default=["imagenet_testbed"],
                   metavar="G", help="reference groups of the authors' tables "
                   "(default: imagenet_testbed; e.g. imagenet_testbed modelvshuman)")
    p.add_argument("--results-dir", metavar="DIR",
                   help="a local copy of the authors' results/ folder (default: "
                        "$IMAGENETX_RESULTS_DIR, else downloaded and cached)")
    _add_analysis(p)
    _add_output(p)
    _add_common(p)

    p = sub.add_parser("spillover", help="augmentation spill-over: per-factor trends "
                                         "against strength (the paper's Figure 6)")
    p.add_argument("--sweep", required=True,
                   help="crop, colorjitter, gaussian_blur (or colorjitter_crop, "
                        "adaptive_colorjitter: one setting each)")
    p.add_argument("--which", choices=WHICH, default="top")
    p.add_argument("--correct", default="class", help="class (default), metaclass, real")
    p.add_argument("--method", default="spearman", help="trend test: spearman (default) or ols")
    p.add_argument("--results-dir", metavar="DIR",
                   help="a local copy of the authors' results/ folder")
    _add_output(p, csv="print the trend table as CSV")

    p = sub.add_parser("paired", help="grouped datasets of edits (ImageNet-E): each slice "
                                      "against the same groups' originals")
    p.add_argument("--dataset", required=True)
    p.add_argument("--pred-field", dest="pred_fields", nargs="+", required=True, metavar="F")
    p.add_argument("--slices", metavar="A,B", help="the edited slices to score (default: all)")
    p.add_argument("--by-factor", action="store_true",
                   help="also per ImageNet-X factor of the source image")
    p.add_argument("--factor-slicing", choices=["factors", "top_factor"], default="factors",
                   help="--by-factor: all of an image's factors (default) or its top factor")
    p.add_argument("--no-intervals", action="store_true", help="skip the bootstrap intervals")
    _add_output(p)
    _add_common(p)

    p = sub.add_parser("report", help="write an HTML report of error ratios, tables as CSV")
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
    _add_analysis(p)
    _add_common(p)

    p = sub.add_parser("app", help="open the FiftyOne App with this plugin")
    p.add_argument("--dataset", required=True)
    p.add_argument("--port", type=int)
    p.add_argument("--address", help="the address the App binds (FiftyOne's default: "
                   "fo.config.default_app_address; 127.0.0.1 keeps it on this machine)")
    p.add_argument("--remote", action="store_true", help="serve without opening a browser")
    p.add_argument("--no-worker", dest="worker", action="store_false",
                   help="no `fiftyone delegated launch` worker beside the App (long jobs "
                        "then run inside the App, with progress)")

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
        from imagenetx.benchmarks.imagenet_x.demo import build_demo

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
        print(f"\nOpen it in the App:\n  imagenetx app --dataset {s.dataset}")
        return 0

    if args.command == "tag":
        from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset

        print(tag_dataset(args.dataset, gt_field=args.gt_field,
                          tag_prefix=args.tag_prefix, by_stem=args.by_stem))
        return 0

    if args.command == "load":
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
                "--imagenet-c-dir)")
        if args.dir and not args.benchmark:
            raise ImageNetXError("--dir applies to `load cue-conflict` only")
        if args.variant and not (ood and ood[0] == "v2"):
            raise ImageNetXError("--variant applies to --imagenetv2-dir only")
        if ood:
            from imagenetx.benchmarks.ood import load_ood_dir

            if args.max_samples is not None or args.split:
                raise ImageNetXError(
                    "--split and --max-samples do not apply to OOD release folders")
            dataset, summary = load_ood_dir(
                ood[0], ood[1], name=args.name, overwrite=args.overwrite,
                gt_field=args.gt_field, variant=args.variant)
        elif args.benchmark == "cue-conflict":
            from imagenetx.benchmarks.cue_conflict import load_cue_conflict

            if args.max_samples is not None or args.split:
                raise ImageNetXError(
                    "--split and --max-samples do not apply to cue-conflict")
            dataset, summary = load_cue_conflict(
                args.dir, name=args.name, overwrite=args.overwrite,
                gt_field=args.gt_field)
        elif args.imagenet_e_dir:
            from imagenetx.benchmarks.imagenet_e import load_imagenet_e

            if args.max_samples is not None or args.split:
                raise ImageNetXError(
                    "--split and --max-samples do not apply to --imagenet-e-dir")
            dataset, summary = load_imagenet_e(
                args.imagenet_e_dir, name=args.name, overwrite=args.overwrite,
                gt_field=args.gt_field)
        elif args.imagenet_d_dir:
            from imagenetx.benchmarks.imagenet_d import load_imagenet_d_dir

            if args.max_samples is not None or args.split:
                raise ImageNetXError(
                    "--split and --max-samples do not apply to --imagenet-d-dir")
            dataset, summary = load_imagenet_d_dir(
                args.imagenet_d_dir, name=args.name, overwrite=args.overwrite,
                gt_field=args.gt_field)
        elif args.imagenet_dir:
            if args.max_samples is not None:
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

    if args.command == "edit":
        from imagenetx.edits import edit_dataset

        dataset, summary = edit_dataset(
            args.dataset, args.mask_field, args.edits, seed=args.seed, name=args.name,
            object_label=args.object, out_dir=args.out_dir, inpaint=args.inpaint,
            skip_failed=args.skip_failed, overwrite=args.overwrite,
            workers=args.workers, gt_field=args.gt_field)
        print(summary)
        print(f"Open it in the App:\n  imagenetx app --dataset {dataset.name}")
        return 0

    if args.command == "predict" and (args.corruption or args.corruptions):
        from imagenetx.errors import ImageNetXError
        from imagenetx.probes.corruption import Corruptions

        if args.logits or args.compile or args.slices:
            raise ImageNetXError(
                "--logits, --compile and --slices do not apply with --corruption(s)")
        return _run_probe(args, Corruptions(_corruption_specs(args)))

    if args.command == "probe":
        from imagenetx.errors import ImageNetXError
        from imagenetx.probes import get_probe

        specs = _corruption_specs(args)
        if specs and args.probe != "corruption":
            raise ImageNetXError("--corruption(s) go with `imagenetx probe corruption`")
        options = {"specs": specs} if args.probe == "corruption" else {}
        return _run_probe(args, get_probe(args.probe, **options))

    if args.command == "probe-results":
        from imagenetx.analysis.probes import probe_results
        from imagenetx.present.probes import format_probe, probe_csv

        result = probe_results(args.dataset, args.field, args.probe,
                               gt_field=args.gt_field).to_dict()
        return _print_result(args, result, format_probe, probe_csv)

    if args.command == "corruption-errors":
        from imagenetx.analysis.corruption import imagenet_c_errors
        from imagenetx.present.probes import corruption_csv, format_corruption_errors

        errors = imagenet_c_errors(args.dataset, args.pred_field,
                                   clean_dataset=args.clean_dataset,
                                   clean_accuracy=args.clean_accuracy, gt_field=args.gt_field)
        result = {"dataset": args.dataset, "field": args.pred_field, **errors.to_dict()}
        return _print_result(args, result, format_corruption_errors, corruption_csv)

    if args.command == "predict":
        from imagenetx.models.inference import predict

        print(predict(
            args.dataset, args.model, args.field, arch=args.arch,
            batch_size=args.batch_size, num_workers=args.num_workers,
            device=args.device, amp=args.amp, compile=args.compile,
            logits=args.logits, limit=args.limit, overwrite=args.overwrite,
            gt_field=args.gt_field, pretrained=not args.random_weights,
            remap_by_position=args.remap_by_position,
            slices=args.slices.split(",") if args.slices else None))
        return 0

    if args.command == "import-predictions":
        from imagenetx.models.predictions import import_prediction_files

        print(import_prediction_files(args.dataset, args.file, args.field,
                                      overwrite=args.overwrite, row_order=args.row_order,
                                      gt_field=args.gt_field))
        return 0

    if args.command == "biases":
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
        return _print_result(args, comparison.to_dict(), format_biases,
                             lambda r: _csv_text(comparison.rows()))

    if args.command == "shape-bias":
        from imagenetx.analysis.shape_bias import shape_bias
        from imagenetx.errors import ImageNetXError
        from imagenetx.present.formatting import (
            format_published,
            format_shape_bias,
            shape_bias_csv,
        )

        published_options = [args.measures, args.published_dir,
                             args.published_models != "all" or None]
        if not args.published and any(x is not None for x in published_options):
            raise ImageNetXError(
                "--measure, --published-models and --published-dir go with --published")
        if args.published and args.csv:
            raise ImageNetXError("--published prints as text or with --json, not --csv")
        measures = None
        if args.published:
            from imagenetx.analysis.published import DEFAULT_MEASURES, load_published

            # bad tables and unknown measures fail before the shape bias is computed
            published = load_published(args.published_dir)
            measures = args.measures or DEFAULT_MEASURES
            for name in measures:
                published.measure(name)
        results = shape_bias(args.dataset, args.pred_fields,
                             intervals=not args.no_intervals,
                             include_humans=not args.no_humans)
        result = results.to_dict()
        if not args.published:
            return _print_result(args, result, format_shape_bias, shape_bias_csv)
        from imagenetx.analysis.published import compare_with_published

        result["published"] = compare_with_published(
            results, measures, args.published_models, published=published).to_dict()
        return _print_result(args, result, lambda r: format_shape_bias(r) + "\n\n"
                             + format_published(r["published"]))

    if args.command == "ratios":
        from imagenetx.analysis import compute_ratios
        from imagenetx.present.formatting import format_ratios, ratios_csv

        result = compute_ratios(args.dataset, args.pred_fields,
                                intervals=not args.no_intervals,
                                **_settings(args)).to_dict()
        return _print_result(args, result, format_ratios, ratios_csv)

    if args.command == "paired":
        from imagenetx.analysis.paired import paired_scores
        from imagenetx.present.formatting import format_paired, paired_csv

        result = paired_scores(
            args.dataset, args.pred_fields,
            slices=args.slices.split(",") if args.slices else None,
            by_factor=args.by_factor, factor_slicing=args.factor_slicing,
            gt_field=args.gt_field, intervals=not args.no_intervals).to_dict()
        return _print_result(args, result, format_paired, paired_csv)

    if args.command == "context":
        from imagenetx.analysis.context import reference_cloud
        from imagenetx.present.formatting import context_csv, format_context

        result = reference_cloud(args.dataset, args.pred_fields, args.groups,
                                 results_dir=args.results_dir,
                                 **_settings(args)).to_dict()
        return _print_result(args, result, format_context, context_csv)

    if args.command == "spillover":
        from imagenetx.analysis.spillover import spillover
        from imagenetx.present.formatting import format_spillover, spillover_csv

        result = spillover(args.sweep, args.which, args.correct, args.method,
                           results_dir=args.results_dir).to_dict()
        return _print_result(args, result, format_spillover, spillover_csv)

    if args.command == "discover":
        from imagenetx.analysis import discover_slices
        from imagenetx.present.formatting import format_discovery

        result = discover_slices(
            args.dataset, args.pred_field, args.slicings, max_order=args.max_order,
            min_support=args.min_support, top_k=args.top, score=args.score,
            alpha=args.alpha, intervals=not args.no_intervals,
            **_settings(args)).to_dict()
        return _print_result(args, result, format_discovery)

    if args.command == "report":
        from imagenetx.present.report import write_report

        print(write_report(args.dataset, args.pred_fields, args.out,
                           context_groups=args.context_groups,
                           results_dir=args.results_dir, discover=args.discover,
                           **_settings(args)))
        return 0

    if args.command == "app":
        from imagenetx.plugin import launch_app

        launch_app(args.dataset, port=args.port, address=args.address,
                   remote=args.remote, worker=args.worker)
        return 0

    if args.command == "plugin":
        from imagenetx.plugin import install_plugin

        print(f"Plugin linked at {install_plugin()}")
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
