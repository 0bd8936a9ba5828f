"""The house runs one way: no import circle, no upward import in imagenetx/.

The imports are read with ``ast`` by ``scripts/layers.py`` (``make layers``
prints the counts); docs/architecture.md draws the layers.
"""

import importlib.util
import sys
import textwrap

import pytest

from conftest import REPO

_spec = importlib.util.spec_from_file_location("layers", REPO / "scripts" / "layers.py")
layers = importlib.util.module_from_spec(_spec)
sys.modules["layers"] = layers
_spec.loader.exec_module(layers)


@pytest.fixture(scope="module")
def arrows():
    return layers.read_arrows(str(REPO))


def test_every_file_of_imagenetx_has_a_layer(arrows):
    for path in layers.module_files(str(REPO)).values():
        layers.layer_of(path)  # a new top-level package must be put in LAYERS


def test_no_circle_between_files(arrows):
    # imports inside functions count too: none of them can be dodging a circle
    found = layers.circles(arrows)
    assert not found, "import circles:\n" + "\n".join(
        f"{a.source}:{a.line} imports {a.target}"
        for component in found for a in layers.ties(component, arrows))


def test_no_import_runs_up_the_layers(arrows):
    up = layers.upward(arrows)
    assert not up, "upward imports (docs/architecture.md: what each layer may import):\n" + \
        "\n".join(f"{a.source}:{a.line} imports {a.target}" for a in up)


def test_every_import_inside_a_function_says_why_it_waits(arrows):
    hidden = layers.hidden(arrows)
    assert not hidden, (
        f"imports inside a function without '{layers.LAZY}' (move them to the module's top, "
        "or mark a start-up one):\n"
        + "\n".join(f"{a.source}:{a.line} imports {a.target}" for a in hidden))


def _tree(root, files):
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))


def test_the_reader_finds_circles_upward_and_hidden_imports(tmp_path):
    _tree(tmp_path, {
        "imagenetx/__init__.py": "",
        "imagenetx/metrics/__init__.py": "",
        "imagenetx/metrics/a.py": """
            def f():
                from imagenetx.present import b
            """,
        "imagenetx/present/__init__.py": "",
        "imagenetx/present/b.py": """
            from ..metrics.a import f
            import importlib
            ENTRY = "imagenetx.cli.c:MAIN"
            def g():
                from imagenetx.metrics import a  # lazy: start-up
                importlib.import_module("imagenetx.cli.c")
            """,
        "imagenetx/cli/c.py": "MAIN = 1\n",
        "imagenetx/cli/__init__.py": "",
        "imagenetx/cli/d.py": """
            # lazy imports: start-up
            def h():
                from imagenetx.metrics import a
            """,
    })
    found = layers.read_arrows(str(tmp_path))
    by = {(a.source.split("/", 1)[1], a.target.split("/", 1)[1], a.kind) for a in found}
    assert ("present/b.py", "metrics/a.py", "import") in by  # relative, resolved
    assert ("present/b.py", "cli/c.py", "registry") in by
    assert ("present/b.py", "cli/c.py", "import_module") in by

    assert layers.circles(found) == [["imagenetx/metrics/a.py", "imagenetx/present/b.py"]]
    up = {(a.source, a.target) for a in layers.upward(found)}
    assert up == {("imagenetx/metrics/a.py", "imagenetx/present/b.py"),
                  ("imagenetx/present/b.py", "imagenetx/cli/c.py")}  # import_module counts
    hidden = layers.hidden(found)
    assert [(a.source, a.line) for a in hidden] == [("imagenetx/metrics/a.py", 3)]
    assert len(layers.inside_functions(found)) == 3  # one marked lazy, one in a lazy module
