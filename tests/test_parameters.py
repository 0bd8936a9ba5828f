"""No function of the model run (``imagenetx/models``, ``probes``,
``attacks``) takes more than 10 parameters: a run's settings go into its
config objects (``ModelRequest``, ``RunOptions``), as issue 46 asks.

Read with ``ast`` like tests/test_layers.py: positional and keyword
parameters count, ``self`` / ``cls`` do not, ``*args`` and ``**kwargs``
count one each.
"""

import ast

from conftest import REPO

#: the packages checked
PACKAGES = ("models", "probes", "attacks")
#: the most parameters a function there may take
MOST = 10


def parameter_count(node: ast.AST) -> int:
    """The parameters of a function definition, as this module counts them."""
    a = node.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def over(source: str, most: int = MOST) -> list:
    """``(line, name, count)`` of the functions of ``source`` above ``most``."""
    return [(n.lineno, n.name, parameter_count(n)) for n in ast.walk(ast.parse(source))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and parameter_count(n) > most]


def test_the_count_is_the_one_the_issue_names():
    source = ("def a(self, x, y=1, *args, z, **kw): pass\n"
              "def b(p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11): pass\n"
              "class C:\n    def c(cls, a, /, b): pass\n")
    counts = {n.name: parameter_count(n) for n in ast.walk(ast.parse(source))
              if isinstance(n, ast.FunctionDef)}
    assert counts == {"a": 5, "b": 11, "c": 2}
    assert over(source) == [(2, "b", 11)]


def test_no_function_of_the_model_run_takes_more_than_ten_parameters():
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / "imagenetx" / package).rglob("*.py")):
            for line, name, count in over(path.read_text()):
                found.append(f"{path.relative_to(REPO)}:{line} {name}: {count} parameters")
    assert not found, (f"functions above {MOST} parameters (put the settings in "
                       "ModelRequest / RunOptions or the task):\n" + "\n".join(found))
