"""The one registry shape (imagenetx.registry.Registry) that every plug-in
kind uses: lazy "module:Name" entries, the decorator form, the error for an
unknown name, and each kind's register_* function on top of it."""

import sys

import pytest

from imagenetx.attacks.registry import ATTACKS, attack_names, register_attack
from imagenetx.benchmarks import BENCHMARKS, benchmarks, register_benchmark
from imagenetx.benchmarks.base import Benchmark
from imagenetx.edits.specs import EDIT_KINDS, EditKind, parse_edits, register_edit_kind
from imagenetx.errors import ImageNetXError
from imagenetx.models.sources import SOURCES, register_source, source_of, split_spec
from imagenetx.present.charts import BENCHMARK_CHARTS, CHARTS, ERROR_RATIOS, register_chart
from imagenetx.probes import Probe, get_probe, register_probe
from imagenetx.probes.base import PROBES
from imagenetx.protocols import Protocol, get_protocol, register_protocol
from imagenetx.protocols.registry import PROTOCOLS
from imagenetx.registry import Registry, load_object


@pytest.fixture
def module(tmp_path, monkeypatch):
    """A module on sys.path that counts how often it is imported."""
    (tmp_path / "registry_toy.py").write_text(
        "IMPORTS = globals().get('IMPORTS', 0) + 1\n"
        "class Thing:\n    pass\n"
        "THING = Thing()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "registry_toy"
    sys.modules.pop("registry_toy", None)


def test_a_module_name_entry_is_imported_on_first_lookup_only(module):
    things = Registry("thing")
    things.register("lazy", f"{module}:THING")
    assert module not in sys.modules  # registering imports nothing
    assert "lazy" in things and things.names() == ["lazy"]
    assert module not in sys.modules  # nor does listing the names
    thing = things.get("lazy")
    assert sys.modules[module].THING is thing and sys.modules[module].IMPORTS == 1
    assert things.get("lazy") is thing
    assert things.entry("lazy") == f"{module}:THING"  # the entry stays as registered


def test_a_dotted_name_alone_is_the_module(module):
    assert load_object(module) is sys.modules[module]
    assert load_object(f"{module}:Thing") is sys.modules[module].Thing


def test_build_runs_once_per_entry_and_again_after_replacing_it(module):
    built = []
    things = Registry("thing", build=lambda obj: built.append(obj) or obj())
    things.register("a", f"{module}:Thing")
    first = things.get("a")
    assert things.get("a") is first and len(built) == 1
    things.register("a", dict)
    assert things.get("a") == {} and len(built) == 2


def test_the_decorator_form_registers_and_returns_what_it_decorates():
    things = Registry("thing")

    @things.register("square")
    def square(x):
        return x * x

    assert square(3) == 9 and things.get("square") is square


def test_an_unknown_name_lists_the_known_ones_in_order():
    things = Registry("widget")
    things.register("b", 1)
    things.register("a", 2)
    with pytest.raises(ImageNetXError, match=r"^Unknown widget 'c': use one of b, a$"):
        things.get("c")
    things.unregister("b")
    assert things.names() == ["a"]


def test_an_entry_whose_module_is_missing_says_so():
    things = Registry("widget")
    things.register("gone", "no_such_module_anywhere:Thing")
    with pytest.raises(ImageNetXError, match="The widget 'gone' "
                       r"\(no_such_module_anywhere:Thing\) is not available"):
        things.get("gone")


def test_a_refused_name_is_refused_before_anything_is_stored():
    def check(name):
        if "-" in name:
            raise ImageNetXError(f"Cannot register widget '{name}'")

    things = Registry("widget", check_name=check)
    with pytest.raises(ImageNetXError, match="Cannot register widget 'a-b'"):
        things.register("a-b", 1)
    assert things.names() == []


# -- each kind's register_* is the one way in, on the same registry ----------

def test_every_kind_registers_through_its_own_function():
    @register_benchmark
    class Tiny(Benchmark):
        name = "tiny_bench"

    @register_probe("tiny_probe")
    class TinyProbe(Probe):
        def __init__(self, k=1):
            self.k = k

    @register_attack("tiny_attack")
    def tiny_attack(settings):
        return lambda model, x, labels: x

    source = type(sys)("tiny_source")
    kind = EditKind("tiny_edit", "size", False, example="tiny_edit")
    protocol = Protocol(name="tiny-protocol", title="Tiny", decoder="pil",
                        geometry="resize256-crop224", normalization="imagenet")
    try:
        register_source("tiny", source)
        assert register_edit_kind(kind) is kind
        assert register_protocol(protocol) is protocol
        register_chart(ERROR_RATIOS, benchmark="tiny_bench", name="tiny ratios",
                       default=True)

        assert isinstance(benchmarks()["tiny_bench"], Tiny)
        assert list(benchmarks())[-2:] == ["tiny_bench", "generic"]  # before the generic one
        assert benchmarks()["tiny_bench"] is benchmarks()["tiny_bench"]  # built once
        assert get_probe("tiny-probe", k=3).k == 3
        assert attack_names()[-1] == "tiny_attack" and ATTACKS.get("tiny_attack") is tiny_attack
        assert source_of("tiny") is source
        assert parse_edits(["tiny_edit"])[0].kind == "tiny_edit"
        assert get_protocol("tiny-protocol") is protocol
        assert BENCHMARK_CHARTS["tiny_bench"] == ("tiny ratios", "error ratios")
    finally:
        BENCHMARKS.unregister("tiny_bench")
        PROBES.unregister("tiny_probe")
        ATTACKS.unregister("tiny_attack")
        SOURCES.unregister("tiny")
        EDIT_KINDS.unregister("tiny_edit")
        PROTOCOLS.unregister("tiny-protocol")
        BENCHMARK_CHARTS.pop("tiny_bench")
        CHARTS.unregister("tiny ratios")


@pytest.mark.parametrize("register, args, message", [
    (register_benchmark, (type("Unnamed", (), {"name": "generic"})(),),
     "Cannot register benchmark 'generic'"),
    (register_attack, ("pgd", print), "Cannot register attack 'pgd'"),
    (register_probe, ("a-b", object), "Cannot register probe 'a-b'"),
    (register_source, ("my-lab", object), "Cannot register model source 'my-lab'"),
])
def test_a_bad_name_is_refused_in_one_line(register, args, message):
    with pytest.raises(ImageNetXError, match=message):
        register(*args)


def test_an_unknown_model_spec_lists_every_registered_source():
    source = type(sys)("lab_source")
    source.SYNTAX = "lab:NAME"
    register_source("lab", source)
    try:
        with pytest.raises(ImageNetXError) as e:
            split_spec("keras:resnet50")
        assert str(e.value) == (
            "Unknown model spec 'keras:resnet50': use timm:NAME, torchvision:NAME[:WEIGHTS], "
            "checkpoint:PATH (with `arch`), open_clip:ARCH[/PRETRAINED], hf:ORG/NAME or "
            "hf:/path/to/saved_model, zoo:NAME or lab:NAME")
    finally:
        SOURCES.unregister("lab")
