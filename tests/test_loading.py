"""A benchmark loads itself: the declared loadings, their refusals, the
command line's one path and the App's one form."""

import inspect

import pytest

from imagenetx.benchmarks import benchmarks
from imagenetx.benchmarks.loading import DATASET_OPTIONS, LOADINGS, load_with
from imagenetx.errors import ImageNetXError


@pytest.mark.parametrize("name", list(LOADINGS))
def test_every_declared_source_matches_its_loader(name):
    """The table says what each loader takes: its location keyword, options,
    fixed and context keywords are parameters of the function it names."""
    loading = benchmarks()[name].loading
    assert loading is LOADINGS[name] or loading == LOADINGS[name]
    for source in loading.sources:
        module, _, function = source.loader.partition(":")
        params = inspect.signature(
            getattr(__import__(module, fromlist=[function]), function)).parameters
        wanted = {*(o.name for o in (*source.options, *DATASET_OPTIONS)),
                  *dict(source.fixed), *source.takes}
        if source.location:
            wanted.add(source.location)
        assert wanted <= set(params), (source.name, wanted - set(params))


@pytest.mark.parametrize("loading, options, message", [
    (LOADINGS["imagenet_e"], {"hub": "org/name"},
     "ImageNet-E has no source or option `hub`: it loads from `dir=...` (release folder)"),
    (LOADINGS["imagenet_d"], {},
     "Name where to load ImageNet-D from: `dir=...` (release folder) or `hub=...` (repo id)"),
    (LOADINGS["imagenet_d"], {"dir": "a", "hub": "b/c"},
     "`dir` and `hub` are two sources of ImageNet-D: pass one"),
    (LOADINGS["imagenet_x"], {"dir": "a", "workers": 2},
     "`workers` applies to ImageNet-X's source `hub`, not to `dir`"),
    (LOADINGS["cue_conflict"], {"split": "val"},
     "Cue-conflict has no source or option `split`"),
    (LOADINGS["cue_conflict"], {"download": "x"},
     "Cue-conflict has no source or option `download`: it loads from the download (no "
     "source named) or `dir=...` (stimuli folder)"),
], ids=["unknown-source", "no-source", "two-sources", "option-of-another", "unknown-option",
        "a-source-without-location"])
def test_a_bad_request_is_one_line_before_anything_loads(loading, options, message):
    with pytest.raises(ImageNetXError) as e:
        load_with(loading, **options)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert "--" not in str(e.value)  # the library's words, not the command line's


def test_the_generic_benchmark_says_it_has_no_sources():
    with pytest.raises(ImageNetXError, match="says no sources to load from"):
        benchmarks()["generic"].load(dir="x")


def test_the_command_line_refuses_a_source_the_benchmark_has_not(capsys):
    from imagenetx.cli import main

    assert main(["load", "imagenet-e", "--hub", "org/name"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "ImageNet-E has no source" in err, err
    assert main(["load", "imagenet-d"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Name where to load ImageNet-D" in err, err
    assert main(["load", "imagenet-q", "--dir", "x"]) == 2
    err = capsys.readouterr().err
    assert "Unknown benchmark 'imagenet-q' to load: use one of imagenet-x, " in err, err
    assert "generic" not in err  # it has no sources


# -- the App's form ----------------------------------------------------------


def _form(params: dict) -> dict:
    """The properties of the "Load a benchmark" form for these inputs."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    ctx = ExecutionContext(request_params={"params": params})
    return foo.get_operator(f"{PLUGIN_NAME}/load_benchmark").resolve_input(ctx).type.properties


def _choices(prop) -> list:
    return list(prop.type.values)


def test_the_form_lists_the_benchmarks_and_follows_the_one_chosen():
    form = _form({})
    assert _choices(form["benchmark"]) == list(LOADINGS)  # no registered ones here
    # ImageNet-X, the first: a local folder by default, its split
    assert _choices(form["source"]) == ["dir", "hub"]
    assert {"dir", "split", "name", "overwrite", "gt_field"} <= set(form)
    assert not {"hub", "max_samples", "revision"} & set(form)

    form = _form({"benchmark": "imagenet_x", "source": "hub"})
    assert {"hub", "split", "max_samples", "workers", "revision", "media_from"} <= set(form)
    assert "dir" not in form and form["hub"].required

    form = _form({"benchmark": "imagenet_d", "source": "hub"})
    assert {"hub", "split", "max_samples"} <= set(form)
    assert not {"workers", "media_from", "variant"} & set(form)

    form = _form({"benchmark": "imagenet_v2", "source": "hub"})  # a source it has not
    assert "source" not in form and "hub" not in form
    assert form["dir"].required and _choices(form["variant"])[0] == "matched-frequency"

    form = _form({"benchmark": "imagenet_a", "variant": "top-images"})
    assert "variant" not in form and "dir" in form

    form = _form({"benchmark": "cue_conflict"})  # the download: no folder to give
    assert _choices(form["source"]) == ["download", "dir"] and "dir" not in form
    assert "dir" in _form({"benchmark": "cue_conflict", "source": "dir"})


def test_the_operator_passes_only_the_chosen_sources_inputs(tmp_path):
    """Inputs left from another benchmark or source do not reach the loader:
    the ImageNet-E folder loads though a Hub repo and a variant were typed
    before."""
    import fiftyone as fo
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    install_plugin()
    ctx = ExecutionContext(request_params={"delegated": True, "params": {
        "benchmark": "imagenet_e", "source": "hub", "hub": "org/name",
        "variant": "top-images", "dir": str(tmp_path / "missing"), "name": "load-left"}})
    out = foo.get_operator(f"{PLUGIN_NAME}/load_benchmark").execute(ctx)
    assert "ImageNet-E folder" in out["error"] and "does not exist" in out["error"], out
    assert not fo.dataset_exists("load-left")
