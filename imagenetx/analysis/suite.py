"""Gavrikov & Keuper's suite on one model, in one call: every benchmark of
theirs whose data the user has, then the model's row beside their published
models and the bias-vs-generalization cloud.

For each benchmark dataset found (ImageNet val with ImageNet-X, cue
conflict, ImageNet-A, -R, -Sketch, V2, -C, -C-bar) the model is predicted
into one field (resumable: a second call does only what is missing); on
ImageNet val the spectral and critical-band probes run, and PGD-40 at
0.5/255 (their low budget, ``--attack-n`` images); then
:func:`~imagenetx.analysis.biases.compare_biases` places the values among
the published ones. Missing benchmarks are named with the command that
loads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from typing import Callable, Dict, List, Optional, Sequence, Tuple


from imagenetx.errors import ImageNetXError
from imagenetx.analysis.biases import collect_values, compare_biases
from imagenetx.analysis.demo import DEFAULT_NAME
from imagenetx.attacks.run import robust_count, run_attack
from imagenetx.benchmarks import get_benchmark
from imagenetx.benchmarks.cue_conflict.published import load_published
from imagenetx.benchmarks.imagenet_x.tagging import DEFAULT_FIELD
from imagenetx.benchmarks.loading import load_hint
from imagenetx.models.predict import predict
from imagenetx.models.config import RunOptions
from imagenetx.models.protocol_run import check_dataset, departure_note, resolve_run
from imagenetx.models.sources import ModelRequest, check_request
from imagenetx.probes.run import run_probe
from imagenetx.metrics.stats import INTERVAL_LEVEL, wilson_interval
from imagenetx.protocols.arithmetic import padded_batch_accuracy, padded_batches
from imagenetx.store.datasets import all_slices

#: the suite's benchmarks, in the order they run, and how to get each
BENCHMARKS = tuple((name, title, f"{load_hint(name)} with `Benchmark.load()`")
                   for name, title in (("imagenet_x", "ImageNet val (ImageNet-X)"),
                                       ("cue_conflict", "cue conflict"),
                                       ("imagenet_a", "ImageNet-A"),
                                       ("imagenet_r", "ImageNet-R"),
                                       ("imagenet_sketch", "ImageNet-Sketch"),
                                       ("imagenet_v2", "ImageNetV2"),
                                       ("imagenet_c", "ImageNet-C"),
                                       ("imagenet_cbar", "ImageNet-C-bar")))

#: the published columns the suite fills, as bias and measure names
SUITE_BIASES = ("shape-bias", "spectral-bias", "critical-band-bw")
SUITE_MEASURES = ("imagenet", "imagenet-a", "imagenet-r", "imagenet-v2", "imagenet-sketch",
                  "imagenet-c", "top1_acc/imagenet-cbar", "robustness", "adversarial")
#: the column of the low-budget PGD-40 robust accuracy
PGD_LOW_COLUMN = "top1_acc/PGD-40/low"
#: the protocol the suite follows unless told otherwise
SUITE_PROTOCOL = "gavrikov"


@dataclass(frozen=True)
class ColumnValue:
    """A user's value of a published column whose arithmetic is not the
    plain ratio: the table's arithmetic (what the comparison uses) beside
    the exact ratio.

    Attributes:
        column: the published column
        value: the same quantity the table holds, in percent
        exact: ``correct / n``, in percent
        correct, n: the counts
        how: the table's arithmetic, in words
        interval: on fewer images than the column's, the 95 % Wilson
            interval of ``exact`` in percent (its sampling error); else None
    """

    column: str
    value: float
    exact: float
    correct: int
    n: int
    how: str
    interval: Optional[Tuple[float, float]] = None

    def to_dict(self) -> dict:
        return {"column": self.column, "value": self.value, "exact": self.exact,
                "correct": self.correct, "n": self.n, "how": self.how,
                "interval": list(self.interval) if self.interval else None}

    def note(self, label: str) -> str:
        sampled = (f"; {INTERVAL_LEVEL:.0%} interval {self.interval[0]:.2f}-"
                   f"{self.interval[1]:.2f}% on these {self.n:,} images"
                   if self.interval else "")
        return (f"{label}: {self.column} = {self.value:.4f}% as the table computes it "
                f"({self.how}); exactly {self.correct:,} / {self.n:,} = {self.exact:.4f}%"
                + sampled)


def pgd_column_value(robust: int, n: int, batch_size: int = 128,
                     full: int = 50000) -> ColumnValue:
    """The user's ``PGD-40`` value as Gavrikov & Keuper's table holds it.

    Their script counts the last partial batch as a full one, so with
    ``robust`` of all 50,000 images the column is ``(robust + 48) / 50048``
    (:mod:`imagenetx.protocols.arithmetic`); that is the value compared. On
    fewer images (``--attack-n``, a departure) their arithmetic has no
    counterpart, and the exact ratio is compared."""

    exact = 100.0 * robust / n if n else float("nan")
    if n != full:
        interval = None
        if n:
            low, high = wilson_interval(robust, n, INTERVAL_LEVEL)
            interval = (100.0 * low, 100.0 * high)
        return ColumnValue(PGD_LOW_COLUMN, exact, exact, robust, n,
                           f"the exact ratio: the table's (robust + 48) / 50,048 needs all "
                           f"{full:,} images", interval)
    padded = padded_batches(n, batch_size)
    how = (f"their script counts the last partial batch as a full one of {batch_size}: "
           f"(robust + {padded - n}) / {padded:,}")
    return ColumnValue(PGD_LOW_COLUMN, 100.0 * padded_batch_accuracy(robust, n, batch_size),
                       exact, robust, n, how)


@dataclass
class SuiteResult:
    """What :func:`run_suite` did and found.

    Attributes:
        model: the model spec
        field: its prediction field on every dataset
        datasets: ``{benchmark: dataset name}`` of those found
        missing: ``[(benchmark title, how to get it)]``
        comparison: the :class:`~imagenetx.analysis.biases.BiasComparison`
        steps: one line per step run
        protocol: the protocol every step followed (None: none)
        columns: the values computed with a published column's own
            arithmetic (:class:`ColumnValue`)
    """

    model: str
    field: str
    datasets: Dict[str, str]
    missing: List[tuple]
    comparison: object = None
    steps: List[str] = dc_field(default_factory=list)
    protocol: Optional[str] = None
    columns: List[ColumnValue] = dc_field(default_factory=list)

    def to_dict(self) -> dict:
        return {"model": self.model, "field": self.field, "datasets": self.datasets,
                "missing": [{"benchmark": b, "how": h} for b, h in self.missing],
                "steps": self.steps, "protocol": self.protocol,
                "published_arithmetic": [c.to_dict() for c in self.columns],
                "comparison": self.comparison.to_dict() if self.comparison else None}


def find_datasets(names: Optional[Sequence[str]] = None) -> Tuple[Dict[str, str], List[str]]:
    """``({benchmark: dataset name}, notes)``: the dataset of each suite
    benchmark among ``names`` (the first given of each), or by default
    among every dataset in the database: for ImageNet, a dataset of
    validation images, never the demo (its images are placeholders); where
    several qualify, the first by name, and a note says which was taken."""
    import fiftyone as fo

    wanted = {b for b, _, _ in BENCHMARKS}
    candidates: Dict[str, List[str]] = {}
    for name in names if names is not None else fo.list_datasets():
        if not fo.dataset_exists(name):
            raise ImageNetXError(f"Dataset '{name}' does not exist: see `fiftyone datasets list`")
        dataset = fo.load_dataset(name)
        benchmark = get_benchmark(dataset).name
        if benchmark not in wanted:
            continue
        if names is None and benchmark == "imagenet_x" and not _imagenet_val(dataset):
            continue
        candidates.setdefault(benchmark, []).append(name)
    found = {b: names_[0] for b, names_ in candidates.items()}
    notes = [f"{len(names_)} datasets of {b}: using '{names_[0]}' (pass `datasets` to choose "
             f"among {', '.join(names_)})"
             for b, names_ in candidates.items() if len(names_) > 1 and names is None]
    return found, notes


def check_protocol(found: Dict[str, str], request, options) -> None:
    """Refuses, in one line and before any step, a protocol that does not
    apply to every dataset found (the suite runs all under one protocol).

    Raises:
        ImageNetXError: the first dataset refused, and the fix
    """
    import fiftyone as fo

    for benchmark, name in found.items():
        try:
            _, _, run = resolve_run(benchmark, request, options, name)
            check_dataset(run, all_slices(fo.load_dataset(name)))
        except ImageNetXError as e:
            raise ImageNetXError(
                f"{str(e).rstrip('.')}. The suite runs every dataset it found under one "
                f"protocol: pass `protocol={SUITE_PROTOCOL}` (its own) or `protocol=none`, "
                "or `datasets` with only the datasets it applies to") from None


def _imagenet_val(dataset) -> bool:
    """Whether an ImageNet-X dataset holds real validation images (not the
    demo's placeholders, not only training images)."""

    if dataset.name == DEFAULT_NAME or (dataset.info.get("imagenetx") or {}).get("demo"):
        return False
    split = f"{DEFAULT_FIELD}.split"
    return not dataset.has_field(split) or "val" in dataset.distinct(split)


def run_suite(model: str, field: str, datasets: Optional[Sequence[str]] = None,
              request=None, options=None, probes: bool = True, attack: bool = True,
              attack_n: Optional[int] = 1000, say: Callable[[str], None] = print,
              published_dir: Optional[str] = None, population: str = "all") -> SuiteResult:
    """Runs the suite (see the module docstring).

    Args:
        model: the model spec
        field: its prediction field (probes go to ``<field>_<probe>``, the
            attack to ``<field>_pgd``)
        datasets (None): the datasets to use (default: every dataset of a
            suite benchmark in the database)
        request, options (None): model and run options
            (:mod:`imagenetx.models.config`); every step follows
            ``options.protocol`` (default ``gavrikov``: their preprocessing,
            PGD-40, float32), and what departs from it is noted
        probes (True): run the spectral and critical-band probes on
            ImageNet val
        attack (True): run the protocol's attack (``gavrikov``: PGD-40 at
            0.5/255) on ImageNet val
        attack_n (1000): attack at most this many images (None: all)
        say (print): receives a progress line per step
        published_dir (None): a local folder with Gavrikov's tables
        population ("all"): the published models compared with, ``"all"``
            70 or the paper's 48 ``"resnet50"``

    Raises:
        ImageNetXError: when no dataset of the suite is found, or as the
            steps do
    """
    from dataclasses import replace

    request = request or ModelRequest()
    options = options or RunOptions()
    options = replace(options, protocol=options.protocol or SUITE_PROTOCOL).check()
    check_request(model, request)
    published = load_published(published_dir)  # bad tables fail before any work
    found, choices = find_datasets(datasets)
    missing = [(title, how) for b, title, how in BENCHMARKS if b not in found]
    if not found:
        raise ImageNetXError(
            "No dataset of the suite's benchmarks is loaded: load one or more with "
            + "; ".join(f"{how} ({title})" for _, title, how in BENCHMARKS))
    check_protocol(found, request, options)
    result = SuiteResult(model, field, found, missing, protocol=options.protocol)
    departed: List[str] = []
    for title, how in missing:
        say(f"missing {title}: {how}")
    for note in choices:
        say(note)
    titles = {b: t for b, t, _ in BENCHMARKS}
    steps = [(b, "predict") for b in found]
    if "imagenet_x" in found:
        steps += [("imagenet_x", p) for p in ("spectral", "critical_band") if probes]
        steps += [("imagenet_x", "attack")] if attack else []
    given: Dict[str, float] = {}
    for k, (benchmark, step) in enumerate(steps, 1):
        name = found[benchmark]
        head = f"[{k}/{len(steps)}] {titles[benchmark]} ({name}): {step}"
        say(f"{head} ...")
        if step == "predict":
            s = predict(name, model, field, progress=False, request=request, options=options)
            line = (f"{head}: {s.predicted:,} predicted, {s.already_predicted:,} already"
                    + (f", accuracy {s.accuracy:.4f}" if s.accuracy is not None else ""))
        elif step == "attack":  # at most attack_n in all, a resumed suite too
            done = 0 if options.overwrite else _count(name, f"{field}_pgd")
            limit = None if attack_n is None else max(0, attack_n - done)
            run_options = replace(options, limit=limit)
            s = run_attack(name, model, f"{field}_pgd", None, request, run_options,
                           progress=False)
            if s.protocol == "gavrikov":  # the table's PGD-40 0.5/255 column
                column = pgd_column_value(*robust_count(name, f"{field}_pgd"))
                result.columns.append(column)
                given[PGD_LOW_COLUMN] = column.value
                sampled = (f", {INTERVAL_LEVEL:.0%} interval {column.interval[0] / 100:.4f}-"
                           f"{column.interval[1] / 100:.4f} against the column's 50,000"
                           if column.interval else "")
                line = (f"{head}: PGD-40 0.5/255 robust accuracy {column.exact / 100:.4f} "
                        f"({s.evaluated:,} images{sampled})")
            else:
                robust = "n/a" if s.accuracy is None else f"{s.accuracy:.4f}"
                line = f"{head}: {s.attack} robust accuracy {robust} ({s.evaluated:,} images)"
                departed.append(
                    f"{field}: the attack ran under `protocol={s.protocol or 'none'}`, not "
                    f"gavrikov: not compared with the table's {PGD_LOW_COLUMN} column")
        else:
            s = run_probe(name, model, field, step, progress=False, request=request,
                          options=options)
            line = f"{head}: {s.probed:,} probed, {s.complete:,} already complete"
        if getattr(s, "departures", None):
            departed.append(f"{field} ({titles[benchmark]}, {step}): "
                            f"{departure_note(s.departures)}")
        result.steps.append(line)
        say(line)
    values, notes = collect_values({field: given}, list(found.values()), [field])
    notes += [c.note(field) for c in result.columns] + departed
    if attack and attack_n is not None:
        notes.append(f"{field}: PGD-40 on at most {attack_n:,} ImageNet val images; the table "
                     "attacks all 50,000")
    result.comparison = compare_biases(values, SUITE_BIASES, SUITE_MEASURES, population,
                                       published=published, notes=notes)
    return result


def _count(name: str, field: str) -> int:
    """How many samples of dataset ``name`` have ``field``."""
    import fiftyone as fo

    dataset = fo.load_dataset(name)
    return all_slices(dataset).count(field) if dataset.has_field(field) else 0
