"""Errors in the library's own words: an ``ImageNetXError`` raised outside
``imagenetx/cli/`` names the library's parameters (`` `name` ``,
`` `name=value` ``), never a command-line flag; the command line renders
them as its flags, the App as its forms' labels (tests/test_discovery.py
runs both on a real error)."""

import ast
import textwrap

import pytest
from conftest import REPO

from imagenetx.cli import build_parser
from imagenetx.cli.base import flag_for, in_flags
from imagenetx.errors import ImageNetXError, Parameter, parameters_in

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


def test_the_check_finds_a_flag_in_an_error(tmp_path):
    pkg = tmp_path / "imagenetx" / "store"
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text(textwrap.dedent("""
        from imagenetx.errors import ImageNetXError
        def f(name):
            raise ImageNetXError(f"'{name}' exists: pass --overwrite to replace it")
        def g():
            return ImageNetXError("pip install --force-reinstall x; pass `overwrite=True`")
        def h(e):
            raise errors.ImageNetXError("choose another --field.") from e
        """))
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
