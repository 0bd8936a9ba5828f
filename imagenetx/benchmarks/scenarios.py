"""A benchmark's slicings as scenarios of FiftyOne's Model Evaluation panel.

Each slicing of the dataset's benchmark (ImageNet-X's top factor, factors
and meta-class, ImageNet-D's nuisance, cue conflict's shape and texture
classes, ImageNet-C's corruption and severity, ...) becomes one scenario
whose subsets are its slices present in the dataset, so the native panel
shows each slice's metrics for one evaluation or two side by side, over the
same samples this project counts:

-   a ``sample_field`` scenario (the field, its values), as the panel's
    "Configure scenario" operator writes one, where every sample with a
    value counts;
-   a ``custom_code`` scenario where the benchmark also leaves samples out
    (ImageNet-X's prototypes): a plain dict of subsets, each the slice's
    value and the benchmark's :meth:`~imagenetx.benchmarks.base.Benchmark.base_query`.

Slicings with more than :data:`MAX_SUBSETS` values (the 1000 classes) get
none. :meth:`Benchmark.tagged <imagenetx.benchmarks.base.Benchmark.tagged>`
writes them when a benchmark tags a dataset and when a run writes a field
(a re-tag that wrote nothing keeps those it wrote before, when all are
still there: :func:`kept_scenario_fields`); :func:`prune_scenarios` drops
those whose fields were deleted (the project's panel runs it when it opens).
"""

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from imagenetx.errors import ImageNetXError
from imagenetx.store.scenarios import (
    new_scenario_id,
    read_scenarios,
    record_written,
    write_scenarios,
    written_scenarios,
)

#: the most slices a scenario gets (the panel computes each subset's metrics)
MAX_SUBSETS = 64


@dataclass(frozen=True)
class FieldNames:
    """Where a benchmark's fields are, when no analysis settings say it
    (the attributes of :class:`imagenetx.analysis.settings.Settings` that
    slicings and base queries read, with the same defaults)."""

    gt_field: str = "ground_truth"
    field_name: str = "imagenetx"
    include_prototypes: bool = False
    real_mode: str = "clean"


@dataclass
class ScenarioChanges:
    """What :func:`sync_scenarios` or :func:`prune_scenarios` changed, by
    scenario name."""

    added: List[str] = field(default_factory=list)
    updated: List[str] = field(default_factory=list)
    removed: List[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.updated or self.removed)


def scenario_name(benchmark_title: str, slicing: str) -> str:
    """The name of a slicing's scenario, e.g. ``"ImageNet-X: top factor"``."""
    return f"{benchmark_title}: {slicing.replace('_', ' ')}"


def wanted_scenarios(dataset, benchmark, settings=None) -> Dict[str, Tuple[dict, List[str]]]:
    """The scenarios a benchmark defines on a dataset: ``{name: (scenario
    without its id, the field paths it reads)}``; empty for the generic
    benchmark and for a dataset without the benchmark's fields."""
    settings = settings or FieldNames()
    slicings = _scenario_slicings(dataset, benchmark, settings)
    if not slicings:
        return {}
    query = benchmark.base_query(settings)
    base = benchmark.base_view(dataset, settings)
    present = _present_values(base, [s.path for s in slicings.values()])
    wanted = {}
    for slicing_name, slicing in slicings.items():
        values = [v for v in slicing.values if v in present[slicing.path]]
        if not values:
            continue
        name = scenario_name(benchmark.title, slicing_name)
        fields = [slicing.path, *(query or {})]
        wanted[name] = (_scenario(name, slicing.path, values, query), fields)
    return wanted


def _scenario_slicings(dataset, benchmark, settings) -> dict:
    """``{name: slicing}`` of the slicings that may become scenarios on a
    dataset (their fields exist, at most :data:`MAX_SUBSETS` values), read
    from the schema alone."""
    if benchmark.name == "generic":
        return {}
    try:
        benchmark.check_fields(dataset, settings)
    except ImageNetXError:
        return {}
    base = benchmark.base_view(dataset, settings)
    slicings = {}
    for slicing_name in benchmark.slicing_names(dataset, settings):
        try:
            slicing = benchmark.slicing(dataset, settings, slicing_name)
        except ImageNetXError:  # a field-valued slicing whose field is absent
            continue
        if slicing is None or not base.has_field(slicing.path):
            continue
        if len(slicing.values) > MAX_SUBSETS:
            continue
        slicings[slicing_name] = slicing
    return slicings


def _present_values(samples, paths: List[str]) -> Dict[str, set]:
    """The values of each field path in ``samples``, lists unwound, None
    left out (what ``distinct()`` returns), read in one pass over the
    samples for all paths: a quarter of the time of one ``distinct()`` per
    path."""
    paths = list(dict.fromkeys(paths))
    present = {p: set() for p in paths}
    if not paths:
        return present
    group = {f"v{i}": {"$addToSet": "$" + samples._handle_id_fields(p)[0]}
             for i, p in enumerate(paths)}
    for doc in samples._aggregate(post_pipeline=[{"$group": {"_id": None, **group}}]):
        for i, p in enumerate(paths):
            for value in doc[f"v{i}"]:  # a list field adds each list once
                for v in value if isinstance(value, list) else (value,):
                    if v is not None and not isinstance(v, (list, dict)):
                        present[p].add(v)
    return present


def _scenario(name: str, path: str, values: list, query: Optional[dict]) -> dict:
    if query is None:
        return {"name": name, "type": "sample_field", "subsets": values, "field": path}
    return {"name": name, "type": "custom_code", "subsets": _code(name, path, values, query)}


def _code(name: str, path: str, values: list, query: dict) -> str:
    """The custom code of a slicing whose benchmark leaves samples out: a
    dict of subsets, each the slice's value and the samples that count."""
    lines = [
        f"# {name}: written by imagenet-x; each subset holds the samples",
        "# the error ratios count in that slice",
        f"counted = {query!r}",
        "subsets = {",
    ]
    for v in values:
        lines.append(f"    {str(v)!r}: [dict(type='field', field={path!r}, value={v!r}), "
                     "dict(type='field', expr=counted)],")
    lines.append("}")
    return "\n".join(lines)


def kept_scenario_fields(dataset, benchmark, settings=None) -> Optional[List[str]]:
    """The fields that the scenarios this project wrote on a dataset read,
    when each of them is still in the panel's store, its fields exist, and
    each slicing of the benchmark that may have one has one: while those
    fields are unchanged, :func:`wanted_scenarios` would make the same ones.
    None otherwise (then they must be worked out again). Reads no sample."""
    dataset = dataset._root_dataset
    ours = written_scenarios(dataset)
    if not ours:
        return None
    names = {r["name"] for r in ours.values()}
    slicings = _scenario_slicings(dataset, benchmark, settings or FieldNames())
    if any(scenario_name(benchmark.title, n) not in names for n in slicings):
        return None
    stored = read_scenarios(dataset)
    fields = list(dict.fromkeys(p for r in ours.values() for p in r["fields"]))
    if any(i not in stored for i in ours) or not all(dataset.has_field(p) for p in fields):
        return None
    return fields


def prune_scenarios(dataset) -> ScenarioChanges:
    """Removes the scenarios this project wrote whose fields no longer
    exist (one schema check, no query of the samples)."""
    return apply_scenarios(dataset, None)


def apply_scenarios(dataset, wanted: Optional[Dict[str, Tuple[dict, List[str]]]]
                    ) -> ScenarioChanges:
    """Writes the ``wanted`` scenarios (:func:`wanted_scenarios`) into the
    Model Evaluation panel's store and removes those this project wrote that
    no longer apply (a field deleted, a slice gone); None keeps those whose
    fields all exist. A user's own scenarios, and a user's scenario of the
    same name, are left alone."""
    dataset = dataset._root_dataset
    changes = ScenarioChanges()
    ours = written_scenarios(dataset)
    if wanted is None and not ours:
        return changes
    stored = read_scenarios(dataset)
    ours = {i: r for i, r in ours.items() if i in stored}  # deleted in the panel
    kept = {}
    if wanted is None:
        kept = {i: r for i, r in ours.items()
                if all(dataset.has_field(p) for p in r["fields"])}
    else:
        by_name = {r["name"]: i for i, r in ours.items()}
        others = {s.get("name"): i for i, s in stored.items() if i not in ours}
        for name, (scenario, fields) in wanted.items():
            sid = by_name.get(name)
            if sid is None and name in others:
                other = stored[others[name]]
                if {k: v for k, v in other.items() if k != "id"} != scenario:
                    continue  # a user's own scenario of that name
                sid = others[name]  # the same one (a clone's copy): ours
            sid = sid or new_scenario_id()
            entry = {"id": sid, **scenario}
            if sid not in stored:
                changes.added.append(name)
            elif stored[sid] != entry:
                changes.updated.append(name)
            stored[sid] = entry
            kept[sid] = {"name": name, "fields": fields}
    for sid, record in ours.items():
        if sid not in kept:
            stored.pop(sid, None)
            changes.removed.append(record["name"])
    if changes:
        write_scenarios(dataset, stored)
    if kept != ours or changes:
        record_written(dataset, kept)
    return changes
