"""Errors in the library's own words: an ``ImageNetXError`` raised outside
``imagenetx/cli/`` names the library's parameters (`` `name` ``,
`` `name=value` ``), never a command-line flag, and the library's functions
(`` `tag_dataset()` ``), never a command; the command line renders them as
its flags and commands, the App as its forms' labels and its operators'
labels (tests/test_discovery.py runs the parameters on a real error, the
last test here the calls)."""

import ast
import re
import textwrap

import pytest
from conftest import REPO

from imagenetx.cli import build_parser
from imagenetx.cli.base import command_for, flag_for, in_flags
from imagenetx.errors import CALLS, Call, ImageNetXError, Parameter, calls_in, parameters_in

#: every package and module of imagenetx/ the check reads (the command line
#: is the one place flags belong)
SCOPE = ("analysis", "app", "attacks", "benchmarks", "classes", "edits", "metrics",
         "models", "ood", "present", "probes", "protocols", "store", "__init__.py", "__main__.py",
         "disk.py", "doctor.py", "errors.py", "memory.py", "options.py", "ports.py", "registry.py")

def cli_flags() -> set:
    """Every flag of every ``imagenetx`` command, from argparse's own
    definitions."""
    parser = build_parser()
    flags = set()
    for sub in parser._subparsers._group_actions[0].choices.values():
        for action in sub._actions:
            flags.update(o for o in action.option_strings if o.startswith("--"))
    return flags - {"--help"}


def _texts(node) -> list:
    """The string pieces of an error's arguments (f-strings' literal parts
    included)."""
    return [n.value for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def flags_in_errors(root, flags: set, scope=SCOPE) -> list:
    """``(path, line, flag)`` for each flag a string given to an
    ``ImageNetXError(...)`` names, in the files of ``scope`` under
    ``root/imagenetx``."""
    base = root / "imagenetx"
    paths = []
    for entry in scope:
        path = base / entry
        paths += sorted(path.rglob("*.py")) if path.is_dir() else [path] * path.exists()
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call)
                    and getattr(node.func, "id", getattr(node.func, "attr", None))
                    == "ImageNetXError"):
                continue
            words = " ".join(_texts(node)).replace("`", " ").replace("(", " ").split()
            for word in words:
                flag = word.split("=")[0].rstrip(".,;:)'\"")
                if flag in flags:
                    found.append((str(path.relative_to(base)), node.lineno, flag))
    return found


@pytest.fixture(scope="module")
def found():
    return flags_in_errors(REPO, cli_flags())


def test_no_library_error_names_a_command_line_flag(found):
    assert not found, ("library errors that name a flag (name the parameter as `name` or "
                       "`name=value`; the CLI renders it):\n"
                       + "\n".join(f"imagenetx/{p}:{line}: {flag}" for p, line, flag in found))


def test_the_scope_is_every_package_but_the_command_line():
    names = {p.name for p in (REPO / "imagenetx").iterdir()
             if p.name != "cli" and (p.suffix == ".py" or (p / "__init__.py").exists())}
    assert names <= set(SCOPE), f"add to SCOPE: {names - set(SCOPE)}"


def _module(root, package: str, source: str) -> None:
    """Writes ``source`` as ``imagenetx/<package>/a.py`` under ``root``."""
    pkg = root / "imagenetx" / package
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text(textwrap.dedent(source))


def test_the_check_finds_a_flag_in_an_error(tmp_path):
    _module(tmp_path, "store", """
        from imagenetx.errors import ImageNetXError
        def f(name):
            raise ImageNetXError(f"'{name}' exists: pass --overwrite to replace it")
        def g():
            return ImageNetXError("pip install --force-reinstall x; pass `overwrite=True`")
        def h(e):
            raise errors.ImageNetXError("choose another --field.") from e
        """)
    found = flags_in_errors(tmp_path, {"--overwrite", "--field"}, scope=("store",))
    assert found == [("store/a.py", 4, "--overwrite"), ("store/a.py", 8, "--field")]


def test_a_message_names_its_parameters():
    e = ImageNetXError("pass `overwrite=True` to replace it, or choose another `field`; "
                       "`imagenetx doctor` says more; `protocol='gavrikov'`")
    assert e.parameters == [Parameter("overwrite", "True"), Parameter("field"),
                            Parameter("protocol", "'gavrikov'")]
    assert e.parameters[2].bare_value == "gavrikov"
    assert e.render(lambda p: p.name.upper()) == (
        "pass OVERWRITE to replace it, or choose another FIELD; `imagenetx doctor` says "
        "more; PROTOCOL")
    assert e.render(lambda p: None) == str(e)  # no words of its own: the library's
    assert parameters_in("no parameter, `two words`, ``literal``") == []


def _command(name):
    parser = build_parser(only=name)
    return parser._subparsers._group_actions[0].choices[name]


def test_the_command_line_names_its_own_flags():
    attack = _command("attack")
    actions = {a.dest: a for a in attack._actions}
    assert flag_for(actions["overwrite"], Parameter("overwrite", "True")) == "--overwrite"
    assert flag_for(actions["overwrite"], Parameter("overwrite", "False")) is None
    assert flag_for(actions["eps"], Parameter("eps", "4/255")) == "--eps 4/255"
    assert flag_for(actions["field"], Parameter("field")) == "--field"
    assert in_flags("pass `overwrite=True` or another `field`; `eps=4/255`; `logits=True`; "
                    "`protocol='none'`", attack) == (
        "pass --overwrite or another --field; --eps 4/255; `logits=True`; --protocol none")


# -- calls: a library message names the library's function, never a command --

#: texts outside imagenetx/cli/ that may name a command, as (file, command):
#: each is shown by that command line alone
COMMAND_TEXTS = {
    ("doctor.py", "plugin"), ("doctor.py", "cache"),  # `imagenetx doctor`'s advice
    ("store/service.py", "db"),  # the service every command shares, run from a shell
    ("app/install.py", "plugin"), ("app/install.py", "app"),  # `imagenetx plugin`'s report
    ("app/launch.py", "plugin"),  # `imagenetx app`'s note
    # the pushed dataset card says how each field was made, as the command line
    ("present/push.py", "predict"), ("present/push.py", "import-predictions"),
}


def _strings(tree) -> list:
    """``(line, text)`` of each string literal of a module that is not a
    docstring, an f-string's values written as ``X``."""
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    inner = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.JoinedStr):
            out.append((n.lineno, "".join(v.value if isinstance(v, ast.Constant) else "X"
                                          for v in n.values)))
        elif (isinstance(n, ast.Constant) and isinstance(n.value, str)
              and id(n) not in docs and id(n) not in inner):
            out.append((n.lineno, n.value))
    return out


def _library_files(root, scope=SCOPE):
    base = root / "imagenetx"
    for entry in scope:
        path = base / entry
        for file in (sorted(path.rglob("*.py")) if path.is_dir() else [path] * path.exists()):
            yield str(file.relative_to(base)), ast.parse(file.read_text(), str(file))


def commands_in_texts(root, commands: set, scope=SCOPE, allowed=frozenset()) -> list:
    """``(path, line, command)`` for each ``imagenetx COMMAND`` a library
    string names (outside docstrings and reST ````literals````)."""
    found = []
    for path, tree in _library_files(root, scope):
        for line, text in _strings(tree):
            for m in re.finditer(r"(?<!``)\bimagenetx ([a-z][a-z0-9-]*)", text):
                if m.group(1) in commands and (path, m.group(1)) not in allowed:
                    found.append((path, line, m.group(1)))
    return sorted(found)


def calls_in_texts(root, scope=SCOPE) -> list:
    """``(path, line, call)`` for each call span a library string names."""
    return [(path, line, call) for path, tree in _library_files(root, scope)
            for line, text in _strings(tree) for call in calls_in(text)]


@pytest.fixture(scope="module")
def commands():
    parser = build_parser()
    return set(parser._subparsers._group_actions[0].choices)


def test_no_library_text_names_a_command(commands):
    found = commands_in_texts(REPO, commands, allowed=COMMAND_TEXTS)
    assert not found, ("library texts that name a command (name the library call as "
                       "`function()`, with its door in imagenetx.errors.CALLS):\n"
                       + "\n".join(f"imagenetx/{p}:{line}: imagenetx {c}" for p, line, c in found))


def test_the_command_check_finds_a_command(tmp_path):
    _module(tmp_path, "analysis", '''
        """Docstring: ``imagenetx tag`` is fine here."""
        def f(name):
            raise ImageNetXError(f"'{name}' is untagged: run `imagenetx tag` first")
        HINT = "predict again with `logits=True` (imagenetx predict --logits)"
        OK = "run `tag_dataset()`; ``imagenetx tag`` in reST; imagenetx nosuch"
        ''')
    assert commands_in_texts(tmp_path, {"tag", "predict"}, scope=("analysis",)) == [
        ("analysis/a.py", 4, "tag"), ("analysis/a.py", 5, "predict")]


def test_every_call_a_library_text_names_is_in_the_table():
    found = calls_in_texts(REPO)
    assert found, "the check reads no call: is the span syntax still `name()`?"
    unknown = [f"imagenetx/{p}:{line}: `{c.name}()`" for p, line, c in found
               if c.name not in CALLS]
    assert not unknown, "calls missing from imagenetx.errors.CALLS:\n" + "\n".join(unknown)


def test_every_call_s_arguments_are_flags_of_its_command():
    from imagenetx.cli import command_parser

    for path, line, call in calls_in_texts(REPO):
        if call.arguments:
            rendered = command_for(call, command_parser)
            assert "=" not in rendered, f"imagenetx/{path}:{line}: {rendered}"


def _operators() -> dict:
    """The plugin's operators by name, with their labels, as FiftyOne builds
    them from the operator classes fiftyone.yml lists."""
    import importlib.util
    import sys

    import yaml

    listed = yaml.safe_load((REPO / "fiftyone.yml").read_text())["operators"]
    spec = importlib.util.spec_from_file_location(
        "imagenetx_plugin_under_test", REPO / "__init__.py",
        submodule_search_locations=[str(REPO)])
    plugin = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = plugin
    spec.loader.exec_module(plugin)
    import importlib

    operators = importlib.import_module(f"{spec.name}.operators")
    found = {}
    for value in vars(operators).values():
        if isinstance(value, type) and hasattr(value, "config"):
            try:
                config = value().config
            except Exception:
                continue
            if getattr(config, "name", None) in listed:
                found[config.name] = config.label
    return found


def test_every_call_in_the_table_names_a_real_function_command_and_operator(commands):
    import importlib

    from imagenetx.benchmarks import loadable_benchmarks

    operators = _operators()
    for name, door in CALLS.items():
        module, attr = door.function.split(":")
        target = importlib.import_module(module)
        for part in attr.split("."):
            target = getattr(target, part)
        assert callable(target) and attr.endswith(name.split(".")[-1]), (name, door)
        words = door.command.split()
        assert words[0] in commands, (name, door.command)
        for word in words[1:]:  # a benchmark the command fixes: one it loads
            assert word.replace("-", "_") in loadable_benchmarks(), (name, door.command)
        assert door.operator is None or door.operator in operators, (name, door.operator)


def test_a_message_names_its_calls():
    e = ImageNetXError("run `tag_dataset()` first, then `predict(field='r', logits=True)`; "
                       "pass `gt_field`; `fiftyone datasets list`")
    assert e.calls == [Call("tag_dataset"), Call("predict", (Parameter("field", "'r'"),
                                                             Parameter("logits", "True")))]
    assert e.calls[0].door.command == "tag"
    assert e.parameters == [Parameter("gt_field")]  # a call's arguments are no parameters
    assert e.render(lambda p: p.name.upper(), lambda c: c.name.upper()) == (
        "run TAG_DATASET first, then PREDICT; pass GT_FIELD; `fiftyone datasets list`")
    assert e.render(lambda p: None, lambda c: None) == str(e)


def test_the_command_line_names_a_call_as_its_command_with_its_flags():
    from imagenetx.cli import command_parser

    text = ("run `tag_dataset()` first; predict with `predict(field='r50', logits=True)`, "
            "`run_probe(probe='blur', field='x')` or `ImageNetX.load(hub='me/val')`; "
            "pass `gt_field`")
    assert in_flags(text, command_parser("ratios"), command_parser) == (
        "run `imagenetx tag` first; predict with `imagenetx predict --field r50 --logits`, "
        "`imagenetx probe blur --field x` or `imagenetx load imagenet-x --hub me/val`; "
        "pass --gt-field")
    # without the commands' parsers: the command, the arguments in the library's words
    assert command_for(Call("predict", (Parameter("logits", "True"),))) == (
        "`imagenetx predict logits=True`")
    assert command_for(Call("nosuch")) is None


def test_a_real_error_names_the_command_on_the_command_line_and_the_operator_in_the_app():
    import contextlib
    import io

    import fiftyone as fo
    import fiftyone.operators as foo

    from imagenetx.analysis import compute_ratios
    from imagenetx.app.install import PLUGIN_NAME, install_plugin
    from imagenetx.cli import main

    name = "errors-untagged"
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    ds.add_sample(fo.Sample(filepath="/data/ILSVRC2012_val_00000001.JPEG",
                            pred=fo.Classification(label="goldfish")))
    try:
        with pytest.raises(ImageNetXError, match=r"run `tag_dataset\(\)`"):
            compute_ratios(ds, "pred")

        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            assert main(["ratios", "--dataset", name, "--pred-field", "pred"]) == 2
        line, = err.getvalue().strip().splitlines()
        assert "run `imagenetx tag`" in line and "tag_dataset" not in line, line

        install_plugin()
        label = _operators()["load_imagenetx"]
        result = foo.execute_operator(
            f"{PLUGIN_NAME}/show_mistakes",
            ctx={"dataset": name, "params": {"pred_field": "pred", "slice": "pose"}})
        assert result.error is None, result.error
        message = result.result["error"]
        assert f'run "{label}"' in message and "tag_dataset" not in message, message
        assert ds.count() == 1 and not ds.has_field("imagenetx")
    finally:
        ds.delete()


def test_the_app_names_a_call_no_operator_makes_as_its_command():
    import importlib

    _operators()  # imports the plugin's package
    forms = importlib.import_module("imagenetx_plugin_under_test.operators.forms")
    assert forms.in_app("run `run_probe(probe='spectral', field='r50')` first") == (
        "run `imagenetx probe spectral --field r50` first")
    assert forms.in_app("`fiftyone datasets list`") == "`fiftyone datasets list`"
