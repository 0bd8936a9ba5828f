"""The docs say what is true: the site builds strictly, every ``imagenetx``
command line in ``docs/`` and the README parses with the real parser, and
the Python snippets import real names (those marked ``<!-- test: run -->``
run).

Conventions (docs/development.md, "Docs that cannot drift"):

- a ```` ```bash ```` block holds concrete examples: each ``imagenetx ...``
  line (also ``python -m imagenetx ...``, ``torchrun ... -m imagenetx ...``;
  ``\\`` continues it, ``#`` starts a comment) must parse;
- a ```` ```text ```` block holds usage synopses with placeholders (``NAME``,
  ``[...]``, ``a|b``): each ``--flag`` must be one of the command's flags,
  and ``--flag a|b`` alternatives among its choices where it has choices;
- an ``imagenetx ...`` code span in prose is checked as a synopsis;
- every ```` ```python ```` block compiles and imports only names that
  exist; one right after ``<!-- test: run -->`` runs.
"""

import argparse
import ast
import contextlib
import importlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple

import pytest

from conftest import REPO, make_dataset

DOC_FILES = sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]
FENCE = re.compile(r"^(`{3,})\s*(\w*)\s*$")
RUN_MARK = "<!-- test: run -->"
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
SPAN = re.compile(r"`imagenetx ([^`]+)`")
SHELL = {">", ">>", "|", "&&", ";", "2>", "2>&1"}


class Block(NamedTuple):
    path: Path
    line: int  # of the first line inside the fence
    lang: str
    text: str
    run: bool


def _blocks(path: Path) -> Iterator[Block]:
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        previous = next((l.strip() for l in reversed(lines[:i]) if l.strip()), "")
        end = i + 1
        while end < len(lines) and lines[end].strip() != m.group(1):
            end += 1
        yield Block(path, i + 2, m.group(2), "\n".join(lines[i + 1:end]),
                    previous == RUN_MARK)
        i = end + 1


def _prose(path: Path) -> Iterator[str]:
    inside = None
    for line in path.read_text().splitlines():
        m = FENCE.match(line)
        if m and inside is None:
            inside = m.group(1)
        elif inside is not None and line.strip() == inside:
            inside = None
        elif inside is None:
            yield line


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(REPO)}:{line}"


BLOCKS = [b for path in DOC_FILES for b in _blocks(path)]


def _examples() -> List[tuple]:
    """(where, argv) of every imagenetx line in a bash block."""
    out = []
    for b in (b for b in BLOCKS if b.lang == "bash"):
        logical, start = "", None
        for k, line in enumerate(b.text.splitlines()):
            if start is None:
                start = b.line + k
            if line.rstrip().endswith("\\"):
                logical += line.rstrip()[:-1] + " "
                continue
            words = shlex.split(logical + line, comments=True)
            # a shell redirection or pipe ends the command
            words = words[:next((k for k, w in enumerate(words) if w in SHELL), len(words))]
            logical, first = "", start
            start = None
            # `python -m imagenetx ...`, `torchrun ... -m imagenetx ...`
            module = next((k for k in range(len(words) - 1)
                           if words[k:k + 2] == ["-m", "imagenetx"]), None)
            if module is not None:
                words = words[module + 1:]
            if words[:1] == ["imagenetx"]:
                out.append((_where(b.path, first), words[1:]))
    return out


def _synopses() -> List[tuple]:
    """(where, text) of every imagenetx synopsis: text blocks and prose spans."""
    out = []
    for b in (b for b in BLOCKS if b.lang == "text"):
        for k, line in enumerate(b.text.splitlines()):
            if line.startswith("imagenetx "):
                out.append([_where(b.path, b.line + k), line[len("imagenetx "):]])
            elif line.startswith(" ") and out and out[-1][0].startswith(
                    str(b.path.relative_to(REPO))):
                out[-1][1] += " " + line.strip()
    for path in DOC_FILES:
        for k, line in enumerate(_prose(path)):
            out += [(f"{path.relative_to(REPO)} (prose)", m.group(1)) for m in SPAN.finditer(line)]
    return [tuple(s) for s in out]


@pytest.fixture(scope="module")
def commands() -> Dict[str, argparse.ArgumentParser]:
    from imagenetx.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def _flags(parser: argparse.ArgumentParser) -> Dict[str, argparse.Action]:
    return dict(parser._option_string_actions)


def test_examples_parse(commands):
    from imagenetx.cli import build_parser

    examples = _examples()
    assert len(examples) > 50, "the convention found too few examples"
    bad = []
    for where, argv in examples:
        parser = build_parser()
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                parser.parse_args(argv)
        except SystemExit:
            bad.append(f"{where}: imagenetx {shlex.join(argv)}\n    {err.getvalue().strip().splitlines()[-1]}")
            continue
        # argparse takes a prefix of a flag; the docs must spell it out
        flags = _flags(commands[argv[0]])
        bad += [f"{where}: {f} is not a flag of `imagenetx {argv[0]}`"
                for f in FLAG.findall(" ".join(argv)) if f not in flags
                and not any(a.startswith(f + "=") for a in argv)]
    assert not bad, "doc examples the parser refuses:\n" + "\n".join(bad)


def test_synopses_name_real_flags(commands):
    synopses = _synopses()
    assert len(synopses) > 20
    bad = []
    for where, text in synopses:
        command = text.split()[0]
        if command.isupper() or not command[0].isalpha():
            continue  # `imagenetx COMMAND --help`, `imagenetx ...`, `imagenetx --help`
        if command not in commands:
            bad.append(f"{where}: no command `imagenetx {command}`")
            continue
        flags = _flags(commands[command])
        words = text.replace("[", " ").replace("]", " ").split()
        for k, word in enumerate(words):
            for flag in FLAG.findall(word):
                if flag not in flags:
                    bad.append(f"{where}: {flag} is not a flag of `imagenetx {command}`")
                    continue
                choices = flags[flag].choices
                following = words[k + 1] if k + 1 < len(words) else ""
                if choices and re.fullmatch(r"[\w.-]+(\|[\w.-]+)+", following):
                    bad += [f"{where}: `{flag} {alt}`: {alt} is not one of {list(choices)}"
                            for alt in following.split("|") if alt not in choices]
    assert not bad, "doc synopses name flags that do not exist:\n" + "\n".join(bad)


def test_every_command_is_documented(commands):
    """The CLI page's synopsis lists every command."""
    cli = (REPO / "docs" / "cli.md").read_text()
    missing = [c for c in commands if f"imagenetx {c}" not in cli]
    assert not missing, f"docs/cli.md does not list: {missing}"


def _imported_names(tree: ast.AST) -> Iterator[tuple]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("imagenetx"):
            for alias in node.names:
                yield node.lineno, node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("imagenetx"):
                    yield node.lineno, alias.name, None


def test_python_snippets_import_real_names():
    bad = []
    for b in (b for b in BLOCKS if b.lang == "python"):
        try:
            tree = ast.parse(b.text)
        except SyntaxError as e:
            bad.append(f"{_where(b.path, b.line + e.lineno - 1)}: {e.msg}")
            continue
        for lineno, module, name in _imported_names(tree):
            where = _where(b.path, b.line + lineno - 1)
            try:
                mod = importlib.import_module(module)
            except ImportError as e:
                bad.append(f"{where}: {e}")
                continue
            if name and not hasattr(mod, name):
                try:
                    importlib.import_module(f"{module}.{name}")
                except ImportError:
                    bad.append(f"{where}: {module} has no {name}")
    assert not bad, "doc snippets import names that do not exist:\n" + "\n".join(bad)


def test_api_table_names_exist():
    """The Python API page's table names functions relative to imagenetx."""
    text = (REPO / "docs" / "api.md").read_text()
    table = text[text.index("## Where to start"):]
    bad = []
    for name in re.findall(r"`((?:[a-z_]+\.)+[a-z_]+)`", table):
        module, _, attr = f"imagenetx.{name}".rpartition(".")
        try:
            if not hasattr(importlib.import_module(module), attr):
                importlib.import_module(f"{module}.{attr}")
        except ImportError:
            bad.append(name)
    assert not bad, f"docs/api.md names that do not exist: {bad}"


@pytest.fixture(scope="module")
def doc_datasets(photos_dir):
    """Small stand-ins for the datasets the runnable snippets name: the demo
    (real photos under val file names, ImageNet's labels as predictions)
    and an untagged dataset of the same photos."""
    import fiftyone as fo

    from imagenetx.benchmarks.imagenet_x.sources import load_imagenet_dir
    from imagenetx.store.schema import declare_classification

    load_imagenet_dir(str(photos_dir), name="imagenet-x-demo", overwrite=True)
    demo = fo.load_dataset("imagenet-x-demo")
    declare_classification(demo, "imagenet_labels")
    demo.set_values("imagenet_labels", [
        fo.Classification(label=g.label, class_index=g.class_index, confidence=1.0)
        if g else None for g in demo.values("ground_truth")])
    make_dataset("my-imagenet", photos_dir)
    yield
    for name in ("imagenet-x-demo", "my-imagenet"):
        fo.delete_dataset(name)


RUNNABLE = [b for b in BLOCKS if b.lang == "python" and b.run]


@pytest.mark.parametrize("block", RUNNABLE, ids=[_where(b.path, b.line) for b in RUNNABLE])
def test_runnable_snippets_run(block, doc_datasets):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.text, _where(block.path, block.line), "exec"), {})
    assert out.getvalue().strip(), "a runnable snippet should show its result"


def test_site_builds_strictly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "site" / "benchmarks" / "imagenet-x" / "index.html").exists()


def test_readme_is_a_front_page():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) < 300
    assert "make demo" in readme and "make test" in readme
    assert "docs/images/panel.png" in readme
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / link).exists(), link
