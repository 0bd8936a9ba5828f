"""The "Load a benchmark" operator: one form for every benchmark, built from
their declared loadings (:mod:`imagenetx.benchmarks.loading`), as FiftyOne's
zoo operator builds one form for every zoo dataset."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from imagenetx.benchmarks import loadable_benchmarks

from .forms import built_dataset_result, run_with_progress


def _chosen(ctx, loadable: dict):
    """The benchmark and source the form names (else the first of each)."""
    benchmark = loadable.get(ctx.params.get("benchmark")) or next(iter(loadable.values()))
    loading = benchmark.loading
    return benchmark, loading.source(ctx.params.get("source") or "") or loading.sources[0]


def _label(text: str) -> str:
    return text[:1].upper() + text[1:]


def _add_option(inputs, option, description=None) -> None:
    """One declared option as a form input, named by its library keyword."""
    description = description or "optional: " + option.help
    if option.choices:
        inputs.enum(option.name, list(option.choices), default=option.default,
                    label=option.label, description=option.help, view=types.DropdownView())
    elif option.type == "bool":
        inputs.bool(option.name, default=bool(option.default), label=option.label)
    elif option.type == "int":
        inputs.int(option.name, label=option.label, description=description)
    else:
        inputs.str(option.name, default=option.default, label=option.label,
                   description=description)


class LoadBenchmark(foo.Operator):
    """Builds a dataset of a benchmark from one of its sources (a release
    folder on the server, the Hugging Face Hub, its download) and opens it.
    Runs delegated with the loader's progress; the Hub token is the plugin
    secret ``HF_TOKEN``."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="load_benchmark",
            label="ImageNet-X: load a benchmark",
            description=("A benchmark's data as a dataset, from its release folder, the "
                         "Hugging Face Hub or its download"),
            dynamic=True,  # the inputs follow the benchmark and source chosen
            execute_as_generator=True,
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        from imagenetx.benchmarks.loading import DATASET_OPTIONS

        loadable = loadable_benchmarks()
        benchmark, source = _chosen(ctx, loadable)
        loading = benchmark.loading
        choices = types.Dropdown()
        for name, b in loadable.items():
            choices.add_choice(name, label=b.loading.title, description=", ".join(
                s.label for s in b.loading.sources))
        inputs = types.Object()
        inputs.enum("benchmark", choices.values(), required=True,
                    default=next(iter(loadable)), label="Benchmark", view=choices)
        if len(loading.sources) > 1:
            radio = types.RadioGroup()
            for s in loading.sources:
                radio.add_choice(s.name, label=_label(s.label), description=s.help)
            inputs.enum("source", radio.values(), default=loading.sources[0].name,
                        label="Source", view=radio)
        if source.location:
            inputs.str(source.name, required=True, label=_label(source.label),
                       description=source.help)
        elif len(loading.sources) == 1:
            inputs.view("source_note", types.Notice(label=source.help))
        for option in source.options:
            _add_option(inputs, option)
        for option in DATASET_OPTIONS:
            _add_option(inputs, option, f"optional: {loading.default_name} when empty"
                        if option.name == "name" else None)
        return types.Property(inputs, view=types.View(label="Load a benchmark"))

    def execute(self, ctx):
        from imagenetx.benchmarks.loading import DATASET_OPTIONS
        from imagenetx.store.datasets import all_slices

        benchmark, source = _chosen(ctx, loadable_benchmarks())
        options = {o.name: ctx.params.get(o.name) for o in (*source.options, *DATASET_OPTIONS)}
        options = {k: v for k, v in options.items() if v not in (None, "")}
        if source.location:
            options[source.name] = (ctx.params.get(source.name) or "").strip() or None

        def job(progress):
            return benchmark.load(progress=progress, token=ctx.secrets.get("HF_TOKEN"),
                                  **options)

        def finish(result):
            dataset, summary = result
            info = dataset.info.get("imagenetx") or {}
            pulled = info.get("source") or info.get("pulled_from") or {}
            counts = ({"samples": len(all_slices(dataset)), "groups": len(dataset)}
                      if dataset.media_type == "group" else {"samples": len(dataset)})
            return built_dataset_result(dataset, summary, revision=pulled.get("revision"),
                                        **counts)

        return run_with_progress(ctx, job, finish)

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        outputs.str("revision", label="Revision (commit) pulled")
        return types.Property(outputs)
