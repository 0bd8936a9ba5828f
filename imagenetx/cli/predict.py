"""Commands that run or import models: ``predict``, ``probe``,
``probe-results``, ``corruption-errors``, ``corruption-accuracy``,
``import-predictions``."""

# lazy imports: start-up (the parser is built, and --help shown, without FiftyOne, torch or scipy)

from imagenetx.attacks.registry import attack_names
from imagenetx.cli.base import CommandGroup, Names, print_result, print_text
from imagenetx.cli.flags import add_gt_field, add_output
from imagenetx.options import AMPS, DECODERS, ROW_ORDERS
from imagenetx.protocols import protocol_names
from imagenetx.probes.base import probe_names
from imagenetx.protocols.robustbench import PREPROCESSING_CHOICES

TITLE = "predictions and probes"


def register(group: CommandGroup) -> None:
    """Adds this module's commands."""
    p = group.add("predict", run_predict,
                  "run an ImageNet classifier, write and evaluate predictions")
    p.add_argument("--dataset", required=True)
    p.add_argument("--model", required=True, metavar="SPEC", help=MODEL_HELP)
    p.add_argument("--field", required=True, help="prediction field to write")
    p.add_argument("--arch", help="architecture of a checkpoint: a timm name, torchvision:NAME or "
                        "open_clip:ARCH (a zero-shot model)")
    p.add_argument("--remap-by-position", action="store_true",
                   help="checkpoint only: when its key names differ from --arch's but its "
                        "tensors line up one to one in order and shape, load them by position")
    add_zero_shot(p)
    add_runtime(p)
    add_protocol(p)
    p.add_argument("--logits", action="store_true", help="also store the 1000 logits")
    p.add_argument("--limit", type=int, help="predict at most N samples")
    p.add_argument("--overwrite", action="store_true",
                   help="predict samples that already have a prediction too")
    p.add_argument("--random-weights", dest="pretrained", action="store_false",
                   help="skip the pretrained weights (throughput tests only)")
    p.add_argument("--slices", metavar="A,B",
                   help="grouped datasets: predict only these group slices (default: all)")
    _add_corruptions(p)
    add_gt_field(p)

    p = group.add("probe", run_probe, "predict under every level of a probe (band-pass "
                                      "filters, corruptions, ...), resumable; print accuracy "
                                      "per level")
    p.add_argument("probe", choices=Names(probe_names))
    _add_probe_model(p)
    p.add_argument("--level", dest="levels", nargs="+", metavar="KEY",
                   help="run only these levels, e.g. low:0.1 high:0.5 (default: all)")
    _add_corruptions(p)
    add_gt_field(p)

    p = group.add("attack", run_attack,
                  "adversarial robustness (PGD, FGSM, AutoAttack): adversarial predictions "
                  "per image, robust accuracy, adversarial error ratios per factor")
    p.add_argument("--dataset", required=True)
    p.add_argument("--model", required=True, metavar="SPEC", help=MODEL_HELP)
    p.add_argument("--field", required=True,
                   help="the adversarial prediction field to write, e.g. r50_pgd")
    add_protocol(p, default="gavrikov",
                 help="gavrikov (default): PIL Resize 256 + CenterCrop 224, foolbox PGD-40 "
                      "Linf at 0.5/255, step 2/255, as Gavrikov & Keuper; robustbench: "
                      "AutoAttack standard Linf at 4/255 on RobustBench's 5,000 validation "
                      "images (all required), its per-model preprocessing; none: the model's "
                      "own preprocessing; settings given on top are recorded as departures")
    p.add_argument("--attack", choices=Names(attack_names),
                   help="the attack (default: the protocol's)")
    p.add_argument("--eps", metavar="E", help="the budget in [0, 1] units, e.g. 0.5/255 or 4/255")
    p.add_argument("--norm", choices=["linf", "l2"], help="the threat model (default linf)")
    p.add_argument("--steps", type=int, help="PGD steps (default 40)")
    p.add_argument("--step-size", metavar="S", help="PGD's absolute step size (default 2/255)")
    p.add_argument("--no-random-start", dest="random_start", action="store_false",
                   default=None, help="PGD starts at the image, not at a random point")
    p.add_argument("--seed", type=int, help="seeds each batch's random start (default 0)")
    p.add_argument("--n", dest="limit", type=int, metavar="N",
                   help="attack at most N samples (a resumed run: N more)")
    add_model_options(p)
    add_runtime(p, amp_help="autocast dtype (default auto: float32, as Gavrikov's script "
                            "and RobustBench attack; bf16 is faster on a GPU)")
    p.add_argument("--overwrite", action="store_true",
                   help="attack samples that already have an adversarial prediction too")
    p.add_argument("--slices", metavar="A,B",
                   help="grouped datasets: attack only these group slices (default: all)")
    add_gt_field(p)

    p = group.add("embed", run_embed,
                  "write each sample's embedding by a model (its penultimate features, or an "
                  "open_clip image tower's) to a field, with its predictions beside it")
    _add_model_run(p, "the embeddings field to write (predictions go to FIELD_predictions)",
                   "embed at most N samples (a resumed run: N more)",
                   "embed samples that already have an embedding too")
    p.add_argument("--random-weights", dest="pretrained", action="store_false",
                   help="skip the pretrained weights (tests only)")
    p.add_argument("--slices", metavar="A,B",
                   help="grouped datasets: embed only these group slices (default: all)")
    add_gt_field(p)

    p = group.add("probe-results", run_probe_results,
                  "accuracy per probe level; spectral bias; corruption errors, CE, mCE, "
                  "relative mCE")
    p.add_argument("--dataset", required=True)
    p.add_argument("--field", required=True, help="the prediction field the probe ran for")
    p.add_argument("--probe", required=True, choices=Names(probe_names))
    add_output(p, csv="print one CSV row per level")
    add_gt_field(p)

    p = group.add("corruption-errors", run_corruption_errors,
                  "ImageNet-C (released folders): top-1 error per corruption and severity, "
                  "CE and mCE against AlexNet, relative mCE, and the mean top-1 accuracy "
                  "over all 19 corruptions")
    p.add_argument("--dataset", required=True, help="a dataset loaded with `load imagenet-c`")
    p.add_argument("--pred-field", required=True, metavar="F")
    clean = p.add_mutually_exclusive_group()
    clean.add_argument("--clean-dataset", metavar="NAME",
                       help="the clean images (ImageNet val) with the same prediction field, "
                            "for the relative CE and mCE")
    clean.add_argument("--clean-accuracy", type=float, metavar="A",
                       help="the clean top-1 accuracy as a fraction, e.g. 0.76")
    add_output(p, csv="print one CSV row per corruption and severity")
    add_gt_field(p)

    p = group.add("corruption-accuracy", run_corruption_accuracy,
                  "ImageNet-C, -C-bar or -3DCC (released folders): top-1 and top-5 accuracy "
                  "per corruption and severity and their mean, as Gavrikov & Keuper and "
                  "RobustBench (corruptions_3d) report them")
    p.add_argument("--dataset", required=True,
                   help="a dataset loaded with `load imagenet-c`, `load imagenet-cbar` or "
                        "`load imagenet-3dcc`")
    p.add_argument("--pred-field", required=True, metavar="F",
                   help="the prediction field (top-5 needs it predicted with --logits)")
    add_output(p, csv="print one CSV row per corruption and severity")
    add_gt_field(p)

    p = group.add("import-predictions", run_import_predictions,
                  "write a model's predictions from a toolkit CSV or testbed pickle, "
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
    add_gt_field(p)


#: what --model takes
MODEL_HELP = ("timm:NAME, torchvision:NAME[:WEIGHTS], checkpoint:PATH, "
              "open_clip:ARCH[/PRETRAINED], hf:ORG/NAME or zoo:NAME")


def add_model_options(p):
    """How ``--model`` is loaded: a checkpoint's architecture, zero-shot
    prompts (``probe``, ``attack``, ``suite``; ``predict`` spells out
    ``--remap-by-position``)."""
    p.add_argument("--arch", help="architecture of a checkpoint: a timm name, torchvision:NAME or "
                        "open_clip:ARCH (a zero-shot model)")
    p.add_argument("--remap-by-position", action="store_true",
                   help="checkpoint only: load tensors by position (see predict)")
    add_zero_shot(p)


def add_zero_shot(p):
    """The prompts of a zero-shot model (open_clip:, hf: CLIP or SigLIP)."""
    zs = p.add_mutually_exclusive_group()
    zs.add_argument("--templates", metavar="openai|simple|FILE",
                    help="zero-shot models: prompt templates, OpenAI's 80 (openai, the "
                         "default), open_clip's simple set, or a file of one template per "
                         "line with {c} for the class name")
    zs.add_argument("--prompt", metavar="TEXT",
                    help='zero-shot models: one prompt with {c} for the class name, e.g. '
                         '"A photo of a {c}" (ImageNet-D\'s protocol)')


def add_protocol(p, default=None, help=None):
    """``--protocol NAME``: a paper's pinned setting (``imagenetx protocols``)."""
    p.add_argument("--protocol", choices=Names(protocol_names), default=default, help=help or (
        "a paper's setting as its authors ran it (`imagenetx protocols` lists what each "
        "pins; default: the dataset's benchmark's own: imagenet-d on ImageNet-D, "
        "model-vs-human on cue conflict; none: the model's own configuration); settings "
        "given on top are recorded as departures"))
    p.add_argument("--preprocessing", choices=PREPROCESSING_CHOICES, help=(
        "with --protocol robustbench: RobustBench's preprocessing by name (default: the "
        "leaderboard entry's own, for a checkpoint named after its entry; else "
        "Res256Crop224, recorded as the departure 'preprocessing not named'); timm: the "
        "model's own timm configuration"))


#: ``--amp``'s help where no protocol pins float32 for every model
AMP_HELP = ("autocast dtype (default auto: the protocol's pinned precision where it pins one, "
            "e.g. float32 under gavrikov and robustbench, fp16 for a CLIP head on CUDA under "
            "imagenet-d and model-vs-human; else bf16 on CUDA, off on CPU. Another than the "
            "pinned one is recorded as a departure)")


def add_runtime(p, amp_help: str = AMP_HELP):
    """Where and how inference runs (``predict``, ``probe``, ``attack``,
    ``suite``)."""
    p.add_argument("--batch-size", type=int,
                   help="images per forward pass (default: 256 on a GPU, 64 on the CPU)")
    p.add_argument("--num-workers", type=int,
                   help="image decoding processes (default: one per CPU core this "
                        "process may use)")
    p.add_argument("--decoder", default="auto", choices=DECODERS,
                   help="pil, or torchvision (libjpeg-turbo, PIL for the rest); auto "
                        "(default): torchvision where the model's resize allows, and on "
                        "a GPU also decodes a share of each batch there")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda[:N] (default: auto)")
    p.add_argument("--amp", default="auto", choices=AMPS, help=amp_help)
    p.add_argument("--compile", action="store_true", help="torch.compile the model")


def _add_model_run(p, field_help: str, limit_help: str, overwrite_help: str):
    """The model and run options of a model run's command (``probe``,
    ``embed``: as ``predict``'s)."""
    p.add_argument("--dataset", required=True)
    p.add_argument("--model", required=True, metavar="SPEC", help=MODEL_HELP)
    p.add_argument("--field", required=True, help=field_help)
    add_model_options(p)
    add_runtime(p)
    add_protocol(p)
    p.add_argument("--limit", type=int, help=limit_help)
    p.add_argument("--overwrite", action="store_true", help=overwrite_help)


def _add_probe_model(p):
    """The model options of ``imagenetx probe`` (as ``predict``'s)."""
    _add_model_run(p, "the model's prediction field name; results go to <field>_<probe>",
                   "probe at most N samples",
                   "rerun the levels on every sample (also: another model into the field)")


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


def _probe(args, probe) -> int:
    """Runs a probe from parsed arguments; prints its summary and table."""
    from imagenetx.analysis.probes import probe_results
    from imagenetx.errors import ImageNetXError
    from imagenetx.present.probes import format_probe
    from imagenetx.models.config import from_args
    from imagenetx.probes.run import run_probe

    request, options = from_args(args)
    summary = run_probe(args.dataset, args.model, args.field, probe,
                        levels=getattr(args, "levels", None), request=request, options=options)
    if not _main_rank():
        return 0  # under torchrun, rank 0 prints
    print(summary)
    try:
        result = probe_results(args.dataset, args.field, probe.name, gt_field=args.gt_field)
    except ImageNetXError as e:  # stored, but nothing to score against
        print(f"\nNo accuracy table: {e}")
        return 0
    print()
    print(format_probe(result.to_dict()))
    return 0


def run_predict(args) -> int:
    if args.corruption or args.corruptions:
        from imagenetx.errors import ImageNetXError
        from imagenetx.probes.corruption import Corruptions

        if args.logits or args.compile or args.slices:
            raise ImageNetXError(
                "--logits, --compile and --slices do not apply with --corruption(s)")
        return _probe(args, Corruptions(_corruption_specs(args)))

    from imagenetx.models.predict import predict
    from imagenetx.models.config import from_args

    request, options = from_args(args)
    summary = predict(args.dataset, args.model, args.field, gt_field=args.gt_field,
                      logits=args.logits,
                      slices=args.slices.split(",") if args.slices else None,
                      request=request, options=options)
    if _main_rank():  # under torchrun, rank 0 prints
        from imagenetx.present.protocols import run_summary

        print_text(args, run_summary(summary))
    return 0


def _main_rank() -> bool:
    """Whether this process prints: always, except on ranks 1+ of torchrun."""
    from imagenetx.models.distributed import from_env

    return from_env().main


def run_probe(args) -> int:
    from imagenetx.errors import ImageNetXError
    from imagenetx.probes import get_probe

    specs = _corruption_specs(args)
    if specs and args.probe != "corruption":
        raise ImageNetXError("--corruption(s) go with `imagenetx probe corruption`")
    options = {"specs": specs} if args.probe == "corruption" else {}
    return _probe(args, get_probe(args.probe, **options))


def run_attack(args) -> int:
    from imagenetx.attacks.run import run_attack as attack
    from imagenetx.attacks.budget import settings_from
    from imagenetx.models.config import from_args

    settings = settings_from(
        args.protocol, attack=args.attack, eps=args.eps, norm=args.norm, steps=args.steps,
        step_size=args.step_size, random_start=args.random_start, seed=args.seed)
    request, options = from_args(args)
    summary = attack(args.dataset, args.model, args.field, settings, request, options,
                     gt_field=args.gt_field,
                     slices=args.slices.split(",") if args.slices else None)
    if _main_rank():
        from imagenetx.present.protocols import run_summary

        print_text(args, run_summary(summary))
    return 0


def run_embed(args) -> int:
    from imagenetx.models.embed import run_embed as embed
    from imagenetx.models.config import from_args

    request, options = from_args(args)
    summary = embed(args.dataset, args.model, args.field, request, options,
                    gt_field=args.gt_field,
                    slices=args.slices.split(",") if args.slices else None)
    if _main_rank():
        from imagenetx.present.protocols import run_summary

        print(f"Embeddings in '{args.field}'")
        print(run_summary(summary))
    return 0


def run_probe_results(args) -> int:
    from imagenetx.analysis.probes import probe_results
    from imagenetx.present.probes import format_probe, probe_csv

    result = probe_results(args.dataset, args.field, args.probe,
                           gt_field=args.gt_field).to_dict()
    return print_result(args, result, format_probe, probe_csv)


def run_corruption_errors(args) -> int:
    from imagenetx.analysis.corruption import imagenet_c_errors
    from imagenetx.present.probes import corruption_csv, format_corruption_errors

    errors = imagenet_c_errors(args.dataset, args.pred_field,
                               clean_dataset=args.clean_dataset,
                               clean_accuracy=args.clean_accuracy, gt_field=args.gt_field)
    result = {"dataset": args.dataset, "field": args.pred_field, **errors.to_dict()}
    return print_result(args, result, format_corruption_errors, corruption_csv)


def run_corruption_accuracy(args) -> int:
    from imagenetx.analysis.corruption import corruption_accuracy_of
    from imagenetx.present.probes import corruption_accuracy_csv, format_corruption_accuracy

    result = corruption_accuracy_of(args.dataset, args.pred_field,
                                    gt_field=args.gt_field).to_dict()
    return print_result(args, result, format_corruption_accuracy, corruption_accuracy_csv)


def run_import_predictions(args) -> int:
    from imagenetx.models.prediction_files import import_prediction_files

    print(import_prediction_files(args.dataset, args.file, args.field,
                                  overwrite=args.overwrite, row_order=args.row_order,
                                  gt_field=args.gt_field))
    return 0
