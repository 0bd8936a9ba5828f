"""Run a probe over a FiftyOne collection: every level, one decode per image.

The probe is a task of the model run (:class:`ProbeLevels`,
:mod:`imagenetx.models.run`): loading, protocol, preprocessing, devices,
ranks, claim and background writes are the run's, as for ``predict``.

Storage: one list field per (prediction field, probe), ``<field>_<probe>``
(e.g. ``lite0_spectral``), holding each sample's predicted class index
under every level, in the order of the level keys kept in that field's
``info["imagenetx_probe"]`` (with the probe, the model spec and the
prediction field). 23 spectral levels x 50,000 images are one field of
small integer lists, not 23 top-level fields. A level not yet run is
``-1`` in the list (:data:`NOT_RUN`); an unreadable image leaves the list as it was and
its reason in ``<field>_<probe>_error``.

Resume: a re-run runs only the samples missing one of the requested levels,
and on them only the missing levels; new levels (another corruption) are
appended to the level keys.

Speed: each batch is decoded, resized and cropped once by the DataLoader
workers (only cropped where the benchmark's images keep their geometry), moved to the model's device once, and every level of a pass runs
on it there (``Probe.apply``: the spectral filter on the batch with
``torch.fft``), so decoding and filtering do not bind; probes with a
per-image CPU hook (``apply_image``: the corruptions) run it in the workers.
"""

import time
import zlib
from dataclasses import dataclass, field as dc_field
from typing import Dict, List, NamedTuple, Optional, Sequence

import fiftyone as fo
import numpy as np
import torch

from imagenetx.errors import ImageNetXError
from imagenetx.models.config import RunOptions, configure
from imagenetx.models.device import Engine
from imagenetx.models.loader import ImageFiles, error_message
from imagenetx.models.run import (
    ModelRun, Pass, Plan, Task, record_differences, run)
from imagenetx.models.sources import ModelRequest
from imagenetx.probes.base import get_probe
from imagenetx.probes.stored import INFO_KEY, NOT_RUN, probe_field
from imagenetx.store.datasets import all_slices
from imagenetx.store.names import error_field


@dataclass
class ProbeSummary:
    """What :func:`run_probe` did."""

    dataset: str
    field: str
    probe: str
    model: str
    device: str
    samples: int
    levels: List[str] = dc_field(default_factory=list)
    levels_run: List[str] = dc_field(default_factory=list)
    complete: int = 0
    probed: int = 0
    passes: int = 0
    forwards: int = 0
    failed: int = 0
    failures: list = dc_field(default_factory=list)
    seconds: float = 0.0
    #: the line saying whose stale claim of the field this run took over
    took_over: Optional[str] = None

    @property
    def images_per_second(self) -> float:
        """Model inputs (image x level) per second."""
        return self.forwards / self.seconds if self.seconds else 0.0

    def __str__(self):
        lines = [
            f"Dataset '{self.dataset}', probe '{self.probe}' of model '{self.model}' "
            f"on {self.device} into '{self.field}': {self.samples:,} samples, "
            f"{self.probed:,} probed under {len(self.levels_run)} of "
            f"{len(self.levels)} levels in {self.passes} decoding pass(es) "
            f"({self.forwards:,} model inputs, {self.images_per_second:.1f}/s), "
            f"{self.complete:,} already complete (left alone), "
            f"{self.failed:,} unreadable"]
        if self.took_over:
            lines.insert(0, self.took_over)
        if self.failures:
            lines.append(
                f"Unreadable images are recorded in '{error_field(self.field)}', e.g. "
                + "; ".join(f"{p}: {m}" for p, m in self.failures))
        return "\n".join(lines)


def sample_seed(sample_id) -> int:
    """A sample's noise seed: stable for the sample across runs."""
    return zlib.crc32(str(sample_id).encode())


def run_probe(samples, model: str, field: str, probe, levels: Optional[Sequence[str]] = None,
              progress=None, request: Optional[ModelRequest] = None,
              options: Optional[RunOptions] = None, **kwargs) -> ProbeSummary:
    """Predicts the samples' images under every level of a probe.

    Args:
        samples: a dataset, view, or dataset name
        model: the model spec (as :func:`imagenetx.models.predict.predict`)
        field: the model's prediction field name; the results go to
            ``<field>_<probe name>`` (:func:`probe_field`)
        probe: a probe object (:mod:`imagenetx.probes.base`) or a probe
            name (``spectral``, ``corruption``, ...) built with defaults
        levels (None): the levels to run (default: all of the probe's)
        progress (None): as in ``predict``
        request (None), options (None), **kwargs: the model and the run,
            as in ``predict`` (the images are decoded on the CPU: probes add
            no GPU decoding); ``overwrite=True`` reruns the requested
            levels on every sample, and allows another model than the one
            stored

    Returns:
        a :class:`ProbeSummary`

    Raises:
        ImageNetXError: before any image is read or anything written, for
            a bad option, level, model spec, or a model without the 1000
            ImageNet outputs
    """
    request, options = configure(request, options, **kwargs)
    return run(samples, model, field, ProbeLevels(probe, levels), request, options, progress)


class ProbeLevels(Task):
    """The probe task: every requested level still missing, one pass per
    level group (one decode per image and group), the predicted class
    index per level merged into each sample's list.

    Args:
        probe: a probe object or a probe name
        levels (None): the levels to run (default: all of the probe's)
    """

    decode_on_device = False  # the probes transform CPU-decoded crops

    def __init__(self, probe, levels: Optional[Sequence[str]] = None):
        self.probe = get_probe(probe) if isinstance(probe, str) else probe
        all_levels = list(self.probe.levels())
        self.wanted = all_levels if levels is None else list(levels)
        unknown = [lv for lv in self.wanted if lv not in all_levels]
        if unknown or not self.wanted:
            raise ImageNetXError(
                f"Unknown level(s) {', '.join(map(repr, unknown)) or '(none given)'} of "
                f"probe '{self.probe.name}': use some of {', '.join(all_levels)}")

    def target(self, field: str) -> str:
        if not field or "." in field or field.startswith("_"):
            raise ImageNetXError(
                f"`field='{field}'` is not a top-level field name: use letters, digits "
                "and underscores, e.g. `field='r50'`")
        return probe_field(field, self.probe.name)

    def describe(self, model: str) -> str:
        return f"probe {self.probe.name} of {model}"

    def start(self, run: ModelRun) -> "ProbePlan":
        dataset, pfield, overwrite = run.dataset, run.target, run.options.overwrite
        stored = _stored_info(dataset, pfield, self.probe.name, run.model, overwrite)
        differ = (record_differences(stored["run"], run.record)
                  if stored and stored.get("run") else [])
        if differ and all_slices(dataset).count(pfield):  # the same spec, other weights or prompts
            if not overwrite:
                raise ImageNetXError(
                    f"'{pfield}' holds probe results of '{run.model}' with other "
                    f"{', '.join(differ)}: pass another `field`, or `overwrite=True` to "
                    "replace them")
            stored = None  # replaced whole, as another model's
        if stored is None and dataset.has_field(pfield) and run.ranks.main:
            # overwrite with another model, now that it loads: no sample keeps the
            # old model's lists (with a limit the rest would read as the new one's)
            all_slices(dataset).clear_sample_field(pfield)
        order = list(stored["levels"]) if stored else []
        order += [lv for lv in self.wanted if lv not in order]
        position = {lv: i for i, lv in enumerate(order)}
        # without stored info (a new field, or overwrite with another model)
        # the old lists, in another level order, are not read
        has_list = stored is not None

        def listing():  # rank 0's
            columns = run.samples.values(["_id", "filepath"] + ([pfield] if has_list else []),
                                         _raw=True)
            _declare(dataset, pfield, run.field, self.probe.name, run.model, order, run.record)
            return columns

        columns = run.listing(listing)
        ids, paths = columns[0], columns[1]
        current = columns[2] if has_list else [None] * len(ids)
        todo, missing = [], set()
        for k, values in enumerate(current):
            values = list(values or [])
            gaps = [lv for lv in self.wanted if overwrite or position[lv] >= len(values)
                    or values[position[lv]] is None or values[position[lv]] < 0]
            if gaps:
                todo.append(k)
                missing.update(gaps)
        summary = ProbeSummary(
            dataset.name, pfield, self.probe.name, run.model, str(run.placement.device),
            len(ids), levels=order, complete=len(ids) - len(todo), took_over=run.took_over)
        if run.options.limit is not None:
            todo = todo[:run.options.limit]
        run_levels = [lv for lv in self.wanted if lv in missing]
        summary.levels_run = run_levels if todo else []
        groups = ((self.probe.level_groups(run_levels) if hasattr(self.probe, "level_groups")
                   else [run_levels]) if todo else [])
        share, = run.share([todo])
        return ProbePlan(
            summary, ids=[ids[k] for k in share], paths=[paths[k] for k in share],
            lists=[_padded(current[k], len(order)) for k in share], position=position,
            groups=groups)

    def passes(self, run: ModelRun, plan: "ProbePlan") -> List[Pass]:
        probe = self.probe
        seeds = [sample_seed(i) for i in plan.ids]
        return [Pass(plan.paths, _ProbeLevels(run.engine, probe, group, seeds, plan.summary),
                     _Updates(plan, group, run.target),
                     inputs=_host_inputs,
                     images=_ProbeImages(plan.paths, seeds, run.reader, probe, group), depth=4)
                for group in plan.groups]

    def finish(self, run: ModelRun, plan: "ProbePlan") -> ProbeSummary:
        summary = plan.summary
        if not plan.groups:
            return summary
        totals = plan.totals  # every rank's
        summary.passes = len(plan.groups)
        summary.probed, summary.forwards = totals["probed"], totals["forwards"]
        summary.seconds = time.perf_counter() - run.started
        return summary


@dataclass
class ProbePlan(Plan):
    """A probe run's plan: this rank's samples still missing a level, their
    level lists (merged into as the passes write), each level's place in
    the lists and the level groups (one pass each)."""

    lists: list = dc_field(default_factory=list)
    position: Dict[str, int] = dc_field(default_factory=dict)
    groups: list = dc_field(default_factory=list)

    def share(self) -> dict:
        return {"probed": len(self.ids) - len(self.failed), "forwards": self.summary.forwards}


def _stored_info(dataset, pfield, probe_name, model, overwrite) -> Optional[dict]:
    if not dataset.has_field(pfield):
        return None
    f = dataset.get_field(pfield)
    info = (f.info or {}).get(INFO_KEY)
    if not isinstance(f, fo.ListField) or info is None:
        raise ImageNetXError(
            f"Field '{pfield}' exists and is not a '{probe_name}' probe field: "
            "pass another `field` (the results go to <field>_<probe>)")
    if info.get("model") != model and not overwrite:
        raise ImageNetXError(
            f"'{pfield}' holds probe results of model '{info.get('model')}', not "
            f"'{model}': pass another `field`, or `overwrite=True` to replace them")
    if overwrite and info.get("model") != model:
        return None  # a new model starts a new level order
    return info


def _declare(dataset, pfield, field, probe_name, model, order, run: dict):
    if not dataset.has_field(pfield):
        dataset.add_sample_field(pfield, fo.ListField, subfield=fo.IntField)
    f = dataset.get_field(pfield)
    f.info = {INFO_KEY: {"probe": probe_name, "field": field, "model": model,
                         "levels": list(order), "run": run}}
    f.description = (f"predicted class index per '{probe_name}' level (keys in "
                     f"info['{INFO_KEY}']['levels'])")
    f.save()


def _padded(values, n: int) -> list:
    values = [NOT_RUN if v is None else v for v in values or []]
    return values + [NOT_RUN] * (n - len(values))


class _ProbeImages(ImageFiles):
    """Image files -> ``(position, uint8 tensor, None, error)``: ``(3, H, W)``
    cropped images, or, for a probe with ``apply_image``, ``(L, 3, H, W)``
    with the probe's levels applied in the worker (on the crop as a uint8
    ``H x W x 3`` numpy array, whichever decoder read it)."""

    def __init__(self, paths, seeds, reader, probe, levels):
        super().__init__(paths, reader)
        self.seeds = seeds
        self.probe = probe
        self.levels = levels

    def __getitem__(self, i):
        if not hasattr(self.probe, "apply_image"):
            return super().__getitem__(i)
        try:
            image = np.ascontiguousarray(self.reader(self.paths[i]).permute(1, 2, 0).numpy())
            stack = np.stack([self.probe.apply_image(image, lv, self.seeds[i])
                              for lv in self.levels])
            return i, torch.from_numpy(stack).permute(0, 3, 1, 2).contiguous(), None, None
        except Exception as e:  # a bad image costs only that image
            return i, None, None, error_message(e)


def _host_inputs(batch) -> tuple:
    """A probe batch as the workers made it: ``(positions, uint8 crops or
    level stacks on the CPU, failures)``; the task moves it."""
    return batch.positions, batch.images, batch.failed


class LevelsResult(NamedTuple):
    """One batch of a probe pass: the positions read, each level's
    predicted class indices for them, the ``(position, message)`` failures."""

    positions: list
    predicted: Dict[str, list]
    failed: list


class _ProbeLevels:
    """Runs every level of a pass on each decoded batch (a
    :class:`LevelsResult`), counting the model inputs into ``summary``."""

    def __init__(self, engine: Engine, probe, levels, seeds, summary: ProbeSummary):
        self.engine = engine
        self.summary = summary
        self.probe = probe
        self.levels = levels
        self.seeds = seeds
        self.cpu_hook = hasattr(probe, "apply_image")
        classes = engine.classifier.classes
        # stored as ImageNet-1k indices, whatever the head's classes
        self.indices = None if classes.is_imagenet else torch.tensor(
            classes.indices, device=engine.device)

    def __call__(self, positions, batch, failed):
        predicted = {}
        if batch is not None:
            with torch.inference_mode():
                x = batch.to(self.engine.device, non_blocking=True).float().div_(255)
                batch_seeds = [self.seeds[p] for p in positions.tolist()]
                for j, level in enumerate(self.levels):
                    if self.cpu_hook:
                        images = x[:, j]
                    else:
                        images = self.probe.apply(x, level, batch_seeds)
                    best = self.engine.logits(images).argmax(dim=1)
                    self.summary.forwards += len(images)
                    predicted[level] = best if self.indices is None else self.indices[best]
            predicted = {lv: p.cpu().tolist() for lv, p in predicted.items()}
        return LevelsResult(positions.tolist(), predicted, failed)


class _Updates:
    """Merges a pass's predictions into the samples' level lists: the
    updates of one result (an unreadable image's list is left as it was)."""

    def __init__(self, plan: ProbePlan, levels, pfield: str):
        self.plan, self.levels, self.pfield = plan, levels, pfield

    def __call__(self, result: LevelsResult) -> dict:
        plan, chunk = self.plan, {}
        for row, pos in enumerate(result.positions):
            values = plan.lists[pos]
            for level in self.levels:
                values[plan.position[level]] = int(result.predicted[level][row])
            chunk[plan.ids[pos]] = {self.pfield: values}
        return chunk
