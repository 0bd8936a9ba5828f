"""Charts the App's panel offers, and the registry of which dataset has
which.

A :class:`Chart` says everything the panel needs: how to compute its result
over a view, the plotly figure and the markdown summary of that result, and
which samples a click on a bar or marker shows. The panel knows no chart
by name: it asks :func:`charts_for` which charts a dataset has and draws
the one the user picked.

-   every benchmark offers :data:`ERROR_RATIOS` (the ImageNet-X paper's
    Figure 1 over its slicings);
-   a benchmark adds its own with :func:`register_chart` (the cue-conflict
    shape bias, ImageNet-X's published models, ImageNet-E's paired edits,
    in this package's modules named after them), the first the default;
-   a task adds one that is offered when the dataset holds its fields
    (:func:`register_chart` without a benchmark: the attack's success per
    slice, once an adversarial field exists; the calibration's reliability
    diagram, on every dataset).

Charts are registered as :class:`Chart` objects or as ``"module:NAME"``
(imported when a dataset is looked at), in :data:`CHARTS` by name.
"""

import dataclasses
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Union

from imagenetx.analysis import compute_ratios, mistakes_view
from imagenetx.analysis.readouts import readout_notes
from imagenetx.analysis.settings import Settings
from imagenetx.present.figures import error_ratio_chart
from imagenetx.present.formatting import readout_markdown
from imagenetx.registry import Registry, load_plugins


@dataclass(frozen=True)
class Drill:
    """What a click on a chart shows.

    Attributes:
        view: the samples to show
        count: how many (of ``unit``)
        what: what the field does to them, e.g. ``"gets wrong"``
        title: what the clicked value is (None: the chart's slice title)
        unit: what ``count`` counts
    """

    view: object
    count: int
    what: str = "gets wrong"
    title: Optional[str] = None
    unit: str = "samples"


@dataclass(frozen=True)
class Chart:
    """A chart of the panel.

    Attributes:
        name: its name on the panel's Chart buttons
        compute: ``(view, fields, settings) -> result`` (a JSON-ready dict;
            ``settings``: the panel's slicing, correct, real_mode, within)
        figure: ``result -> (plotly traces, layout)``
        summary: ``result -> markdown`` shown under the chart
        click: ``(view, field, value, settings) -> Drill`` for a click on
            ``field``'s bar or marker at ``value``
        hint: the line above the chart (``{slice}``: the slice title)
        slice_title: what the clicked values are (None: the result's
            ``slice_title``)
        click_key: the plotly point key that carries the value
        uses_settings: whether the panel's slicing and label-space controls
            apply to it
        fields: ``(dataset, fields) -> fields`` it draws (None: all)
        offered: ``dataset -> bool``, whether a dataset has it (None: always)
    """

    name: str
    compute: Callable
    figure: Callable
    summary: Callable
    click: Callable
    hint: str
    slice_title: Optional[str] = None
    click_key: str = "x"
    uses_settings: bool = True
    fields: Optional[Callable] = None
    offered: Optional[Callable] = None

    def draw(self, view, fields: List[str], settings: dict) -> tuple:
        """``(traces, layout, summary, slice title)`` over ``view``."""
        if self.fields is not None:
            fields = self.fields(view, fields)
        result = self.compute(view, fields, settings)
        traces, layout = self.figure(result)
        title = self.slice_title or result.get("slice_title") or "slice"
        summary = self.summary(result)
        # beside every chart: which images its numbers count, what they compare with
        readouts = readout_markdown(readout_notes(view, fields, **_analysis(settings)))
        return traces, layout, "\n".join(filter(None, (summary, readouts))), title


def _analysis(settings: dict) -> dict:
    """The panel's settings that :class:`Settings` knows (a chart may be
    given more)."""
    known = {f.name for f in dataclasses.fields(Settings)}
    return {k: v for k, v in (settings or {}).items() if k in known}


def charts_for(samples, benchmark) -> List[Chart]:
    """The charts the panel offers on ``samples`` (the first the default):
    the benchmark's (:data:`BENCHMARK_CHARTS`, the error ratios alone for a
    benchmark not named there), then those of the tasks whose fields it
    holds (:data:`TASK_CHARTS`)."""
    load_plugins()  # an installed plug-in may give this benchmark charts
    names = BENCHMARK_CHARTS.get(benchmark.name, (ERROR_RATIOS.name,))
    charts = [CHARTS.get(name) for name in names]
    for name in TASK_CHARTS:
        chart = CHARTS.get(name)
        if chart.offered is None or chart.offered(samples):
            charts.append(chart)
    return charts


def register_chart(chart: Union[str, Chart], benchmark: Optional[str] = None,
                   default: bool = False, name: Optional[str] = None) -> None:
    """Offers a chart on the panel.

    Args:
        chart: a :class:`Chart`, or ``"module:NAME"`` of one (imported when
            a dataset is looked at)
        benchmark (None): the name of the benchmark whose datasets get it;
            None: a task's chart, offered on any dataset where its
            ``offered`` says so
        default (False): whether it is the benchmark's first chart (the one
            the panel opens with) rather than its last
        name (None): its name in :data:`CHARTS` (default: the chart's own
            ``name``; for ``"module:NAME"``, that string)
    """
    name = name or (chart.name if isinstance(chart, Chart) else chart)
    CHARTS.register(name, chart)
    if benchmark is None:
        if name not in TASK_CHARTS:
            TASK_CHARTS.append(name)
        return
    names = [n for n in BENCHMARK_CHARTS.get(benchmark, (ERROR_RATIOS.name,)) if n != name]
    BENCHMARK_CHARTS[benchmark] = tuple([name, *names] if default else [*names, name])


def fmt(value) -> str:
    """A rate or measure to three decimals, or n/a."""
    return "n/a" if value is None else f"{value:.3f}"


def _ratios(view, fields, settings):
    from imagenetx.analysis.embedding_slices import about_slices  # lazy: start-up

    ratios = compute_ratios(view, fields, **settings).to_dict()
    about = about_slices(view, ratios["slicing"])
    if about is not None:
        ratios["about_slices"] = about
    return ratios


def error_ratio_summary(ratios: dict) -> str:
    """Per field: accuracy, images and the worst slice; for slices found in
    embedding space, what each is: its nearest texts, the factors (or the
    benchmark's default slicing's values) it overlaps most, and whether it
    was found by class or across classes."""
    lines = []
    for field, model in ratios["models"].items():
        acc = model["accuracy"]
        acc = "n/a" if acc is None else f"{acc:.1%}"
        lines.append(
            f"- **{field}**: accuracy {acc} on {model['n']:,} images; worst "
            f"{ratios['slice_title']} "
            f"{model.get('worst_reliable_slice') or model['worst_slice']}"
        )
    for value, about in (ratios.get("about_slices") or {}).items():
        parts = []
        if about.get("texts"):
            parts.append("nearest texts " + ", ".join(
                f"\"{t}\" ({similarity:.2f})" for t, similarity in about["texts"]))
        if about.get("overlap"):
            parts.append(f"overlaps {about['overlap_title']} " + ", ".join(
                f"{v} ({share:.0%})" for v, share in about["overlap"]))
        if about.get("found"):
            parts.append(f"found {about['found']}")
        if parts:
            lines.append(f"- **{value}**: " + "; ".join(parts))
    return "\n".join(lines)


def mistakes_drill(view, field, value, settings) -> Drill:
    """The samples of slice ``value`` that ``field`` gets wrong."""
    shown = mistakes_view(view, field, value, **settings)
    return Drill(shown, len(shown))


#: the ImageNet-X paper's Figure 1 over any slicing; every benchmark has it
ERROR_RATIOS = Chart(
    name="error ratios",
    compute=_ratios,
    figure=error_ratio_chart,
    summary=error_ratio_summary,
    click=mistakes_drill,
    hint="Click a bar to show that model's mistakes in that {slice}.",
)

#: the charts by name (:class:`Chart` or ``"module:NAME"``)
CHARTS: Registry = Registry("chart")
CHARTS.register(ERROR_RATIOS.name, ERROR_RATIOS)
CHARTS.register("published models", "imagenetx.present.charts.imagenet_x:PUBLISHED")
CHARTS.register("shape bias", "imagenetx.present.charts.cue_conflict:SHAPE_BIAS")
CHARTS.register("edits (paired)", "imagenetx.present.charts.imagenet_e:PAIRED")
CHARTS.register("attack success", "imagenetx.present.charts.attacks:ATTACK_SUCCESS")
CHARTS.register("calibration", "imagenetx.present.charts.calibration:CALIBRATION")
CHARTS.register("OOD false positives",
                "imagenetx.present.charts.ood_detection:OOD_FALSE_POSITIVES")
CHARTS.register("effective robustness",
                "imagenetx.present.charts.robustness:EFFECTIVE_ROBUSTNESS")

#: benchmark name -> the names of its charts, the first the default; a
#: benchmark not named here has the error ratios alone
BENCHMARK_CHARTS: Dict[str, tuple] = {
    "imagenet_x": (ERROR_RATIOS.name, "published models"),
    "cue_conflict": ("shape bias", ERROR_RATIOS.name),
    "imagenet_e": ("edits (paired)", ERROR_RATIOS.name),
    **{name: ("OOD false positives", ERROR_RATIOS.name)
       for name in ("imagenet_o", "ninco", "openood_imagenet")},
    # the shifts with a testbed line (imagenetx.analysis.effective_robustness.BENCHMARK_SHIFTS)
    **{name: (ERROR_RATIOS.name, "effective robustness")
       for name in ("imagenet_v2", "imagenet_sketch", "imagenet_a", "imagenet_r",
                    "imagenet_c", "objectnet")},
}

#: the names of the tasks' charts, offered where their ``offered`` says the
#: dataset holds the task's fields
TASK_CHARTS: List[str] = ["attack success", "calibration"]
