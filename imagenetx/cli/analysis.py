"""Commands that score prediction fields on a dataset: ``ratios``,
``discover``, ``paired``, ``shape-bias``, ``ood``, ``robustness``."""

# lazy imports: start-up (the parser is built, and --help shown, without FiftyOne, torch or scipy)

from imagenetx.cli.base import CommandGroup, print_result
from imagenetx.cli.flags import (
    add_analysis,
    add_gt_field,
    add_no_intervals,
    add_output,
    add_published_source,
    add_scoring,
    settings,
)
from imagenetx.options import (
    DISCOVERY_ALPHA as ALPHA,
    DISCOVERY_MAX_ORDER as MAX_ORDER,
    DISCOVERY_MIN_SUPPORT as MIN_SUPPORT,
    DISCOVERY_SCORES as SCORES,
    DISCOVERY_TOP_K as TOP_K,
)

TITLE = "analysis"


def register(group: CommandGroup) -> None:
    """Adds this module's commands."""
    p = group.add("ratios", run_ratios,
                  "per-slice accuracy and error ratios of prediction fields")
    p.add_argument("--dataset", required=True)
    p.add_argument("--pred-field", dest="pred_fields", nargs="+", required=True, metavar="F",
                   help="one or more fo.Classification prediction fields")
    add_analysis(p)
    add_no_intervals(p)
    add_output(p)
    add_gt_field(p)

    p = group.add("discover", run_discover, "find conjunctions of slices where a model errs "
                                            "most above its average")
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
    p.add_argument("--embeddings", metavar="NAME",
                   help="find slices in this embeddings field (or FiftyOne Brain similarity "
                        "index's key) instead (error-aware clusters, Domino's method): --top "
                        "of them")
    p.add_argument("--key", help="with --embeddings: store the slices under this name "
                                 "(a field, saved views; a slicing for ratios and the panel)")
    p.add_argument("--overwrite", action="store_true",
                   help="with --key: replace the slices stored under it")
    p.add_argument("--map", dest="map_method", nargs="?", const="pca", metavar="METHOD",
                   help="with --key: also a FiftyOne Brain visualization of the embeddings "
                        "(brain key KEY_map; pca (default), tsne or umap) for the App's "
                        "Embeddings panel, coloured by KEY")
    p.add_argument("--fit-all", action="store_true",
                   help="with --embeddings: fit on every sample and measure on the same "
                        "(default: fit on half, measure each slice on the other half)")
    p.add_argument("--correctness-only", action="store_true",
                   help="with --embeddings: model right/wrong only, not the true and "
                        "predicted classes (ours: for a failure across many classes)")
    p.add_argument("--within-classes", action="store_true",
                   help="with --embeddings: Domino's slices only (default: pooled with "
                        "those of the same mixture without class terms, for failures "
                        "that span classes)")
    p.add_argument("--describe-with", metavar="SPEC",
                   help="with --embeddings: an open_clip:ARCH/PRETRAINED model (a CLIP or "
                        "SigLIP) to describe each slice by its nearest texts in its space, "
                        "whatever model made the embeddings")
    p.add_argument("--text", dest="texts", nargs="+", default=(), metavar="TEXT",
                   help="with --describe-with: your own descriptions to rank too")
    add_scoring(p)
    add_no_intervals(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_gt_field(p)

    p = group.add("paired", run_paired, "grouped datasets of edits (ImageNet-E): each slice "
                                        "against the same groups' originals")
    p.add_argument("--dataset", required=True)
    p.add_argument("--pred-field", dest="pred_fields", nargs="+", required=True, metavar="F")
    p.add_argument("--slices", metavar="A,B", help="the edited slices to score (default: all)")
    p.add_argument("--by-factor", action="store_true",
                   help="also per ImageNet-X factor of the source image")
    p.add_argument("--factor-slicing", choices=["factors", "top_factor"], default="factors",
                   help="--by-factor: all of an image's factors (default) or its top factor")
    add_no_intervals(p)
    add_output(p)
    add_gt_field(p)

    p = group.add("shape-bias", run_shape_bias, "shape bias of 16-class decisions on a "
                                                "cue-conflict dataset, beside the published "
                                                "humans")
    p.add_argument("--dataset", required=True)
    p.add_argument("--pred-field", dest="pred_fields", nargs="+", required=True, metavar="F")
    p.add_argument("--no-humans", action="store_true",
                   help="leave out the pooled human observers of the dataset")
    add_no_intervals(p)
    p.add_argument("--published", action="store_true",
                   help="also place the shape biases among Gavrikov & Keuper's 70 published "
                        "models: Kendall's tau of shape bias and each --measure, and each "
                        "field's rank (JSON: a \"published\" key)")
    p.add_argument("--measure", dest="measures", nargs="+", metavar="NAME",
                   help="--published: imagenet, imagenet-a, imagenet-r, imagenet-v2, "
                        "imagenet-sketch, imagenet-c (default: these six), id, robustness, "
                        "concepts, adversarial, or any column of benchmark.csv")
    add_published_source(p, "--published: ")
    add_output(p)

    p = group.add("ood", run_ood, "OOD detection: score detectors on an OOD benchmark's "
                                  "stored logits (per image, per OOD set, the headline)")
    p.add_argument("--dataset", required=True)
    p.add_argument("--pred-field", required=True, metavar="F",
                   help="the prediction field, predicted with --logits")
    p.add_argument("--detector", default="msp,max_logit,energy,gen,temp_scaling",
                   metavar="A,B",
                   help="detectors, comma-separated (default: the logit-only ones: "
                        "msp,max_logit,energy,gen,temp_scaling; with --features also "
                        "knn, and with --head react,ash_s,vim)")
    p.add_argument("--convention", metavar="NAME",
                   help="openood, ninco or hendrycks (default: the benchmark's own)")
    p.add_argument("--features", metavar="FIELD",
                   help="the embeddings field `imagenetx embed` wrote (penultimate features)")
    p.add_argument("--head", metavar="NPZ",
                   help="the classifier head as an .npz with arrays weight (C, D) and bias (C,)")
    p.add_argument("--fit-fraction", type=float, default=0.1,
                   help="the share of ID images held out to fit temperatures and feature "
                        "statistics (default: 0.1)")
    p.add_argument("--seed", type=int, default=0, help="of the held-out draw and bootstrap")
    p.add_argument("--no-store", action="store_true",
                   help="do not write the scores as <F>_ood_<detector> fields")
    add_no_intervals(p)
    add_output(p)
    add_gt_field(p)

    p = group.add("robustness", run_robustness,
                  "effective robustness on the ImageNet testbed's lines (a field's runs, or a "
                  "testbed model by name); calibration under shift")
    p.add_argument("--testbed-model", metavar="NAME",
                   help="a model of the testbed's table, e.g. resnet50 (instead of a run)")
    p.add_argument("--dataset", help="the ImageNet val dataset the field predicted")
    p.add_argument("--pred-field", metavar="F",
                   help="the prediction field, the same name on every dataset")
    p.add_argument("--shift", dest="shifts", action="append", metavar="KEY=DATASET",
                   help="a shift and its dataset, repeatable: imagenet-v2 (every variant "
                        "the dataset holds), imagenet-v2-threshold-0.7, imagenet-sketch, "
                        "imagenet-a, imagenet-r, imagenet-c, objectnet")
    p.add_argument("--calibration", action="store_true",
                   help="also ECE (equal-width, equal-mass), RMS calibration error per "
                        "ImageNet-X factor and per shift, before and after a temperature "
                        "fitted on held-out clean images (needs stored logits)")
    p.add_argument("--bins", dest="n_bins", type=int, default=15,
                   help="--calibration: equal-width bins (default: 15)")
    p.add_argument("--mass-bins", type=int, default=100,
                   help="--calibration: equal-mass bins (default: 100, Minderer et al.)")
    p.add_argument("--rms-bin-size", type=int, default=100,
                   help="--calibration: images per RMS bin (default: 100, Hendrycks)")
    p.add_argument("--holdout", type=float, default=0.2,
                   help="--calibration: the share of val the temperature is fitted on "
                        "(default: 0.2)")
    p.add_argument("--seed", type=int, default=0, help="--calibration: the split's seed")
    p.add_argument("--factor", metavar="NAME",
                   help="also the factor's error ratio against effective robustness over "
                        "the testbed models ImageNet-X scored (Spearman's rho), per shift")
    p.add_argument("--results-dir", metavar="DIR",
                   help="--factor: a local copy of the ImageNet-X authors' results/ folder")
    add_no_intervals(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_gt_field(p)


def run_ratios(args) -> int:
    from imagenetx.analysis import compute_ratios
    from imagenetx.analysis.readouts import readout_notes
    from imagenetx.present.formatting import format_ratios, ratios_csv

    result = compute_ratios(args.dataset, args.pred_fields,
                            intervals=not args.no_intervals,
                            **settings(args)).to_dict()
    result["readouts"] = readout_notes(args.dataset, list(result["models"]), **settings(args))
    return print_result(args, result, format_ratios, ratios_csv)


def run_discover(args) -> int:
    if args.embeddings:
        return run_discover_embeddings(args)
    from imagenetx.analysis import discover_slices
    from imagenetx.present.formatting import format_discovery

    result = discover_slices(
        args.dataset, args.pred_field, args.slicings, max_order=args.max_order,
        min_support=args.min_support, top_k=args.top, score=args.score,
        alpha=args.alpha, intervals=not args.no_intervals,
        **settings(args)).to_dict()
    return print_result(args, result, format_discovery)


def run_discover_embeddings(args) -> int:
    from imagenetx.analysis.embedding_slices import discover_error_slices
    from imagenetx.present.formatting import format_error_slices

    result = discover_error_slices(
        args.dataset, args.pred_field, args.embeddings, k=args.top, key=args.key,
        overwrite=args.overwrite, describe_with=args.describe_with, texts=args.texts,
        class_terms=not args.correctness_only, across_classes=not args.within_classes,
        map_method=args.map_method,
        **({"fit_share": None} if args.fit_all else {}), **settings(args)).to_dict()
    return print_result(args, result, format_error_slices)


def run_paired(args) -> int:
    from imagenetx.analysis.paired import paired_scores
    from imagenetx.present.formatting import format_paired, paired_csv

    result = paired_scores(
        args.dataset, args.pred_fields,
        slices=args.slices.split(",") if args.slices else None,
        by_factor=args.by_factor, factor_slicing=args.factor_slicing,
        gt_field=args.gt_field, intervals=not args.no_intervals).to_dict()
    return print_result(args, result, format_paired, paired_csv)


def run_shape_bias(args) -> int:
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
        return print_result(args, result, format_shape_bias, shape_bias_csv)
    from imagenetx.analysis.published import compare_with_published

    result["published"] = compare_with_published(
        results, measures, args.published_models, published=published).to_dict()
    return print_result(args, result, lambda r: format_shape_bias(r) + "\n\n"
                        + format_published(r["published"]))


def run_ood(args) -> int:
    from imagenetx.analysis.ood_detection import read_head, score_ood
    from imagenetx.present.formatting import format_ood, ood_csv

    result = score_ood(
        args.dataset, args.pred_field, args.detector.split(","), convention=args.convention,
        store=not args.no_store, features_field=args.features,
        head=read_head(args.head) if args.head else None, fit_fraction=args.fit_fraction,
        seed=args.seed, intervals=not args.no_intervals, gt_field=args.gt_field).to_dict()
    return print_result(args, result, format_ood, ood_csv)


def run_robustness(args) -> int:
    from imagenetx.analysis.effective_robustness import robustness
    from imagenetx.present.robustness import format_robustness

    options = {}
    if args.calibration:
        options = dict(n_bins=args.n_bins, mass_bins=args.mass_bins,
                       rms_bin_size=args.rms_bin_size, holdout=args.holdout, seed=args.seed)
    result = robustness(args.dataset, args.pred_field, args.shifts, args.testbed_model,
                        calibration=args.calibration, factor=args.factor,
                        gt_field=args.gt_field, intervals=not args.no_intervals,
                        results_dir=args.results_dir, **options).to_dict()
    return print_result(args, result, format_robustness)
