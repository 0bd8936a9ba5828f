"""The layers of ``imagenetx/``, read from its imports (nothing is imported).

Every ``import`` and ``from ... import`` of a file of ``imagenetx/`` (at
module level or inside a function) and every ``importlib.import_module``
call or ``"module:Name"`` registry entry with a literal module name that
points into ``imagenetx`` becomes an arrow between two files. Each file
belongs to a layer (:data:`LAYERS`, bottom first); an arrow may run down or
stay in its layer, never up, and the files may not import each other in a
circle (imports inside functions included, so none of them can be there to
dodge a circle). An import inside a function for start-up speed says so
with :data:`LAZY` on its line (or :data:`LAZY_MODULE` once in its module);
the others are counted; a registry entry (a ``"module:Name"`` string) may name any layer:
it is how an upper layer's plug-in is found without being imported.

Run ``python scripts/layers.py`` (or ``make layers``) for the counts:
lines per package, circles, upward imports and imports inside functions;
``tests/test_layers.py`` fails on any circle or upward import.
"""

import argparse
import ast
import os
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "imagenetx"

#: the layers, bottom first; a unit is a top-level module or package of
#: ``imagenetx``, and each may import its own layer and those below
LAYERS: Tuple[Tuple[str, ...], ...] = (
    ("errors", "disk", "options", "memory", "ports", "registry"),
    ("metrics",),
    ("classes", "protocols"),
    ("store",),
    ("benchmarks",),
    ("models", "edits"),
    ("probes", "attacks", "ood"),
    ("analysis",),
    ("present",),
    ("app", "doctor", "cli", "__main__"),
)

#: the marker on the line of a lazy import (inside a function) for start-up
LAZY = "# lazy: start-up"

#: the same for every import inside a function of a module: a line of its
#: own at module level, in the modules that are imported to build the
#: command line's parser or to check a model spec before torch is imported
LAZY_MODULE = "# lazy imports: start-up"

_REGISTRY_ENTRY = re.compile(r"^(imagenetx(?:\.\w+)+):\w+$")


@dataclass(frozen=True)
class Arrow:
    """One import of ``source`` (a file) naming ``target`` (a file).

    Attributes:
        source: the importing file, relative to the repository root
        target: the imported file
        line: the line of the import in ``source``
        inside_function: whether the import runs inside a function
        lazy: whether its line carries :data:`LAZY`
        kind: ``"import"``, ``"import_module"`` or ``"registry"`` (a
            ``"module:Name"`` string)
    """

    source: str
    target: str
    line: int
    inside_function: bool
    lazy: bool
    kind: str = "import"


def module_files(root: str = ROOT) -> Dict[str, str]:
    """``{dotted module name: path relative to root}`` of every file of the
    package."""
    files = {}
    for folder, dirs, names in os.walk(os.path.join(root, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            path = os.path.relpath(os.path.join(folder, name), root)
            parts = path[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join(parts)] = path
    return files


def unit_of(path: str) -> str:
    """The top-level module or package of ``imagenetx`` a file belongs to."""
    parts = path.split(os.sep)
    return parts[1][:-3] if parts[1].endswith(".py") else parts[1]


def layer_of(path: str) -> int:
    """The index of a file's layer in :data:`LAYERS` (-1 for the package's
    own ``__init__``, which is below everything)."""
    unit = unit_of(path)
    if unit == "__init__":
        return -1
    for index, units in enumerate(LAYERS):
        if unit in units:
            return index
    raise KeyError(f"{path}: its package '{unit}' is in no layer of LAYERS")


class _Reader(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, lines: Sequence[str],
                 files: Dict[str, str]):
        self.module = module
        self.is_package = is_package
        self.lines = lines
        self.files = files
        self.depth = 0
        self.lazy_module = any(line.startswith(LAZY_MODULE) for line in lines)
        self.found: List[Tuple[str, int, bool, bool, str]] = []

    def _resolve(self, name: str) -> Optional[str]:
        """The file of the longest prefix of ``name`` that is a module."""
        parts = name.split(".")
        while parts:
            dotted = ".".join(parts)
            if dotted in self.files:
                return self.files[dotted]
            parts.pop()
        return None

    def _add(self, name: str, node: ast.AST, kind: str = "import") -> None:
        if name != PACKAGE and not name.startswith(PACKAGE + "."):
            return
        target = self._resolve(name)
        if target is None:
            return
        lazy = self.lazy_module or LAZY in self.lines[node.lineno - 1]
        self.found.append((target, node.lineno, self.depth > 0, lazy, kind))

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            package = self.module.split(".")
            if not self.is_package:
                package = package[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join(package + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        for alias in node.names:
            # `from a.b import c` imports the module a.b.c when there is one
            full = f"{base}.{alias.name}"
            self._add(full if full in self.files else base, node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        literal = [a.value for a in node.args
                   if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if name in ("import_module", "__import__") and literal:
            self._add(literal[0], node, "import_module")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            match = _REGISTRY_ENTRY.match(node.value)
            if match:
                self._add(match.group(1), node, "registry")


def read_arrows(root: str = ROOT) -> List[Arrow]:
    """Every arrow between two files of the package."""
    files = module_files(root)
    arrows, seen = [], set()
    for module, path in files.items():
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        reader = _Reader(module, path.endswith("__init__.py"),
                         text.splitlines(), files)
        reader.visit(ast.parse(text, path))
        for target, line, inside, lazy, kind in reader.found:
            arrow = Arrow(path, target, line, inside, lazy, kind)
            if target != path and arrow not in seen:
                seen.add(arrow)
                arrows.append(arrow)
    return arrows


#: arrows that are no imports of the layering: a registry entry names an
#: upper layer's plug-in without importing it
NOT_LAYERING = ("registry",)


def upward(arrows: Sequence[Arrow]) -> List[Arrow]:
    """The imports that run from a lower layer to a higher one."""
    return [a for a in arrows
            if a.kind not in NOT_LAYERING and layer_of(a.target) > layer_of(a.source)]


def circles(arrows: Sequence[Arrow]) -> List[List[str]]:
    """The files that import each other in a loop (strongly connected
    components of more than one file), each sorted; registry entries are
    not imports and are left out."""
    graph = defaultdict(set)
    for a in arrows:
        if a.kind not in NOT_LAYERING:
            graph[a.source].add(a.target)
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(node):
        # iterative Tarjan: the package is deep enough to hit the recursion limit
        work = [(node, iter(sorted(graph[node])))]
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        while work:
            current, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[current])
                if low[current] == index[current]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == current:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[current] = min(low[current], index[child])

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def ties(component: Sequence[str], arrows: Sequence[Arrow]) -> List[Arrow]:
    """The arrows between the files of one circle."""
    members = set(component)
    return [a for a in arrows if a.kind not in NOT_LAYERING
            and a.source in members and a.target in members]


def inside_functions(arrows: Sequence[Arrow]) -> List[Arrow]:
    """The imports of the package placed inside a function."""
    return [a for a in arrows if a.inside_function and a.kind == "import"]


def hidden(arrows: Sequence[Arrow]) -> List[Arrow]:
    """Imports inside a function without the :data:`LAZY` marker."""
    return [a for a in inside_functions(arrows) if not a.lazy]


def lines_per_unit(root: str = ROOT) -> Dict[str, int]:
    """``{top-level module or package: lines}``."""
    counts: Dict[str, int] = defaultdict(int)
    for path in module_files(root).values():
        with open(os.path.join(root, path), encoding="utf-8") as f:
            counts[unit_of(path)] += sum(1 for _ in f)
    return dict(counts)


def report(root: str = ROOT, out=sys.stdout, details: bool = True) -> dict:
    """Prints the counts (and, with ``details``, each offending arrow);
    returns them."""
    arrows = read_arrows(root)
    lines = lines_per_unit(root)
    found_circles = circles(arrows)
    up = upward(arrows)
    inside = inside_functions(arrows)
    not_marked = hidden(arrows)
    print("lines per package (bottom layer first):", file=out)
    for units in LAYERS:
        for unit in units:
            if unit in lines:
                print(f"  {unit:<12} {lines[unit]:>6}", file=out)
    print(f"  {'total':<12} {sum(lines.values()):>6}", file=out)
    print(f"circles: {len(found_circles)} "
          f"({sum(len(c) for c in found_circles)} files)", file=out)
    if details:
        for component in found_circles:
            print(f"  circle of {len(component)}: {', '.join(component)}", file=out)
            for a in ties(component, arrows):
                print(f"    {a.source}:{a.line} -> {a.target}", file=out)
    pairs = {(a.source, a.target) for a in up}
    print(f"upward imports: {len(pairs)} file pairs ({len(up)} import lines)",
          file=out)
    if details:
        for a in up:
            print(f"  {a.source}:{a.line} -> {a.target}", file=out)
    print(f"imports of imagenetx inside functions: {len(inside)} "
          f"({len(inside) - len(not_marked)} marked '{LAZY}', "
          f"{len(not_marked)} not)", file=out)
    if details:
        for a in not_marked:
            print(f"  {a.source}:{a.line} -> {a.target}", file=out)
    return {"lines": lines, "circles": len(found_circles), "upward": len(pairs),
            "inside_functions": len(inside), "not_marked": len(not_marked)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=ROOT, help="the repository root")
    parser.add_argument("--summary", action="store_true",
                        help="the counts only, not each arrow")
    args = parser.parse_args(argv)
    counts = report(args.root, details=not args.summary)
    return 1 if counts["circles"] or counts["upward"] else 0


if __name__ == "__main__":
    sys.exit(main())
