"""Run an attack over a FiftyOne collection as a task of the model run
(:mod:`imagenetx.models.run`): the same loading, decoding, devices,
sharding, resume and background writes as ``predict``, with the attack's
batch computation, attributes, record, departures and gradient check.

The adversarial field has the prediction contract (``label``,
``class_index``, ``confidence``, ``top5``) of the attacked image, plus

-   ``flipped``: whether the attack changed the model's top-1
-   ``clean_class_index``: the model's top-1 on the clean image

and is evaluated like any prediction field (``eval_<field>``), so its
accuracy is the robust accuracy (an image the model already got wrong
counts as not robust, as in Gavrikov's script and RobustBench), and
``imagenetx ratios`` and the panel give adversarial error ratios per
ImageNet-X factor. The field's ``info["imagenetx_model"]["attack"]`` keeps
the settings.
"""

from __future__ import annotations

import dataclasses
import functools
import zlib
from dataclasses import dataclass
from typing import ClassVar, List, Optional, Sequence

import fiftyone as fo
import torch

from imagenetx.attacks.library import InputsInUnitRange, check_gradients, make_attack
from imagenetx.attacks.budget import AttackSettings, protocol_settings
from imagenetx.attacks.subsets import robustbench_view
from imagenetx.errors import ImageNetXError
from imagenetx.models.config import RunOptions, configure
from imagenetx.models.predict import Classify, ClassifyPlan, PredictSummary
from imagenetx.models.run import ModelRun, Pass, run
from imagenetx.models.sources import ModelRequest
from imagenetx.protocols import get_protocol
from imagenetx.benchmarks import get_benchmark
from imagenetx.store.datasets import get_dataset
from imagenetx.store.names import error_field
from imagenetx.store.schema import eval_key_of

#: the protocol an attack follows when none is named: Gavrikov & Keuper's
DEFAULT_PROTOCOL = "gavrikov"

#: the error recorded for a sample that has no ground truth to attack away from
NO_TRUTH = "no ground truth to attack"

#: the attributes an attack adds to each adversarial prediction
ATTRIBUTES = {"flipped": fo.BooleanField, "clean_class_index": fo.IntField}


@dataclass
class AttackSummary(PredictSummary):
    """What :func:`run_attack` did: a :class:`PredictSummary` of the
    adversarial field (its accuracy is the robust accuracy)."""

    COUNTED: ClassVar[tuple] = PredictSummary.COUNTED + ("flipped", "no_truth")

    attack: str = ""
    flipped: int = 0
    #: samples left out because they have no ground truth (counted in
    #: ``failed`` with the unreadable images, but said apart)
    no_truth: int = 0

    def __str__(self):
        # the images that could not be read, without the samples that have no truth
        unreadable = dataclasses.replace(
            self, failed=self.failed - self.no_truth,
            failures=[f for f in self.failures if f[1] != NO_TRUTH])
        body = PredictSummary.__str__(unreadable)
        if self.no_truth:
            first, _, rest = body.partition("\n")
            body = (f"{first}, {self.no_truth:,} with no ground truth (not attacked; "
                    f"recorded in '{error_field(self.field)}')" + (f"\n{rest}" if rest else ""))
        lines = [f"Attack: {self.attack}", body]
        if self.accuracy is not None:
            lines.append(f"Robust accuracy {self.accuracy:.4f} over {self.evaluated:,} "
                         f"samples; {self.flipped:,} of this run's predictions flipped")
        return "\n".join(lines)


def attack_amp(amp: str) -> str:
    """The autocast of an attack run: ``auto`` is float32 (``off``) on
    every device, as Gavrikov's script and RobustBench attack."""
    return "off" if amp == "auto" else amp


def run_attack(
    samples,
    model: str,
    field: str,
    settings: Optional[AttackSettings] = None,
    request: Optional[ModelRequest] = None,
    options: Optional[RunOptions] = None,
    gt_field: str = "ground_truth",
    progress=None,
    slices: Optional[Sequence[str]] = None,
    **kwargs,
) -> AttackSummary:
    """Attacks the samples' images and stores the adversarial predictions.

    Args:
        samples: a dataset, view, or dataset name (a view attacks only its
            samples: ``n`` is ``options.limit``)
        model: a model spec (any source: zero-shot models too)
        field: the adversarial prediction field to write
        settings (None): the attack (default: the protocol's; Gavrikov's
            PGD-40 at 0.5/255)
        request (None): the model options
        options (None): the run options (batch size, device, autocast,
            limit, overwrite, protocol, ...); the protocol (default
            ``gavrikov``) pins the preprocessing and the attack, and
            ``robustbench`` attacks its 5,000 images (all required); settings
            given on top are recorded as departures; ``amp="auto"`` attacks in float32, as
            both references do (``bf16`` is faster on a GPU, with
            lower-precision gradients)
        gt_field ("ground_truth"): the true classes the attack moves away
            from (required)
        progress (None): as in :func:`imagenetx.models.predict.predict`
        slices (None): on a grouped dataset, the group slices to attack
        **kwargs: fields of ``request`` or ``options`` set on top (as in
            :func:`~imagenetx.models.predict.predict`)

    Returns:
        an :class:`AttackSummary`

    Raises:
        ImageNetXError: before anything is written, for a bad setting, a
            dataset without ground truth, or a model gradients do not reach
    """
    request, options = configure(request, options, **kwargs)
    options = options.check()
    name = options.protocol or DEFAULT_PROTOCOL
    protocol = get_protocol(name)
    settings = (settings or protocol_settings(name)).check()
    _check_benchmark(samples)
    attack = make_attack(settings)  # a missing library is said before any work
    if protocol is not None and protocol.subset == "robustbench":
        samples = robustbench_view(samples)  # all 5,000, once each, or one line
    options = dataclasses.replace(options, amp=attack_amp(options.amp), protocol=name)
    task = Attack(attack, settings, attack_departures(protocol, settings), options.amp,
                  gt_field=gt_field, slices=slices)
    return run(samples, model, field, task, request, options, progress)


def attack_departures(protocol, settings: AttackSettings) -> dict:
    """The attack settings that differ from what ``protocol`` pins, as
    ``attack.NAME`` -> the departure in words (none for a protocol that
    pins no attack)."""
    if protocol is None or not protocol.attack:
        return {}

    def said(k, v):
        return f"{v * 255:g}/255" if k in ("eps", "step_size") and isinstance(v, float) else v

    return {f"attack.{k}": f"attack.{k}: {said(k, getattr(settings, k))} (the authors': "
                           f"{said(k, v)})"
            for k, v in protocol.attack.items() if getattr(settings, k) != v}


def _check_benchmark(samples) -> None:
    """Refuses a benchmark scored by decisions over ImageNet's classes
    (cue conflict's 16 categories): an attack moves an image away from one
    true class of the model's."""

    view = get_dataset(samples)
    benchmark = get_benchmark(view)
    if benchmark.decisions() is not None:
        raise ImageNetXError(
            f"Dataset '{view._dataset.name}' is a {benchmark.title} dataset, scored by "
            "decisions over categories, not by one ImageNet class per image: attack an "
            "ImageNet dataset (ImageNet val, -A, -R, V2, ...)")


class Attack(Classify):
    """The attack task: the classify task, each pass's classify batch
    composed with the attack (the adversarial images classified, with
    ``flipped`` and ``clean_class_index``); it needs each image's true class
    and gradients at the inputs.

    Args:
        attack: the attack callable (:func:`~imagenetx.attacks.library.make_attack`)
        settings: its settings (recorded)
        departures: its settings the protocol pins otherwise (a dict: each
            in words)
        amp: the run's autocast (recorded)
        gt_field, slices: as in :class:`~imagenetx.models.predict.Classify`
    """

    def __init__(self, attack, settings: AttackSettings, departures: Sequence[str],
                 amp: str, gt_field: str = "ground_truth",
                 slices: Optional[Sequence[str]] = None):
        super().__init__(gt_field=gt_field, slices=slices, attributes=ATTRIBUTES,
                         needs_truth=True,
                         summary=functools.partial(AttackSummary, attack=settings.describe()),
                         check=lambda run: check_gradients(run.engine, run.model))
        self.attack = attack
        self.settings = settings
        self.departures = tuple(departures)
        self.departure_details = dict(departures) if isinstance(departures, dict) else {}
        self.amp = amp

    def describe(self, model: str) -> str:
        return f"attack {self.settings.describe()} of {model}"

    def record(self) -> dict:
        return {"attack": self.settings.to_dict(), "amp": self.amp}

    def passes(self, run: ModelRun, plan: ClassifyPlan) -> List[Pass]:
        passes = super().passes(run, plan)
        for one in passes:
            one.compute = _AttackBatch(one.compute, plan.todo, self.attack, self.settings,
                                       plan.summary)
        return passes


class _AttackBatch:
    """One batch attacked: clean top-1, the attack, then the classify
    computation on the adversarial images with ``flipped`` and
    ``clean_class_index``."""

    def __init__(self, classify, todo, attack, settings: AttackSettings,
                 summary: AttackSummary):
        self.classify = classify
        self.engine = classify.engine
        self.model = InputsInUnitRange(self.engine)
        # the attack needs gradients at the inputs only: none for the weights
        # (each step would compute and accumulate them)
        self.engine.module.requires_grad_(False)
        self.attack = attack
        self.settings = settings
        self.summary = summary
        self.paths = todo.paths
        classes = self.engine.classifier.classes
        output_of = {label: k for k, label in enumerate(classes.labels)}
        self.truth = [None if t is None else output_of.get(t) for t in todo.truth]
        self.indices = torch.tensor(classes.indices, device=self.engine.device)

    def __call__(self, positions, images, failed):
        if images is None:
            return self.classify(positions, None, failed)
        truth = [self.truth[p] for p in positions.tolist()]
        if any(t is None for t in truth):  # no class to move away from
            keep = [k for k, t in enumerate(truth) if t is not None]
            missing = [(int(positions[k]), NO_TRUTH) for k, t in enumerate(truth) if t is None]
            self.summary.no_truth += len(missing)
            failed = failed + missing
            positions, images = positions[keep], images[keep]
            truth = [truth[k] for k in keep]
            if not keep:
                return self.classify(positions, None, failed)
        x = images.float().div_(255) if images.dtype == torch.uint8 else images
        labels = torch.tensor(truth, device=self.engine.device)
        with torch.inference_mode():
            clean = self.engine.logits(x).argmax(dim=1)
        # each batch's random start is seeded by its first image: a resumed
        # run meets the same batches (writes hold whole batches), so the same noise
        first = self.paths[int(positions[0])]
        torch.manual_seed(self.settings.seed + zlib.crc32(first.encode()))
        with torch.enable_grad():
            adversarial = self.attack(self.model, x.clone(), labels).detach()

        def attrs(top):
            flipped = top[:, 0] != clean
            self.summary.flipped += int(flipped.sum())
            return {"flipped": flipped, "clean_class_index": self.indices[clean]}

        return self.classify(positions, adversarial, failed, attrs=attrs)


def robust_accuracy(samples, field: str, gt_field: str = "ground_truth") -> float:
    """The robust accuracy of an adversarial field: the share of its
    samples whose adversarial prediction is the true class.

    Raises:
        ImageNetXError: when the field holds no evaluated predictions
    """
    robust, n = robust_count(samples, field, gt_field)
    return robust / n if n else float("nan")


def robust_count(samples, field: str, gt_field: str = "ground_truth") -> tuple:
    """``(robust, n)``: how many of the field's evaluated samples keep the
    true class under the attack, of how many.

    Raises:
        ImageNetXError: when the field holds no evaluated predictions
    """

    view = get_dataset(samples)
    key = eval_key_of(field)
    if not view.has_field(key):
        raise ImageNetXError(
            f"Field '{field}' has no evaluation '{key}': run an attack (`run_attack`) "
            "with a ground truth")
    values = [v for v in view.values(key) if v is not None]
    return int(sum(values)), len(values)
