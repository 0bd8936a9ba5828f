"""The run contract (issue 52): one level of task hooks, no task state
outside ``__init__`` (the plan carries it), attack and embed composed with
the classify batch, and the run owning the error field and the gathering.
Structural checks on the source: fast, no model runs (those are in
test_inference, test_probes, test_attacks, test_embedding_slices,
test_distributed)."""

import ast
import inspect

import pytest

from imagenetx.attacks.run import Attack
from imagenetx.models.embed import Embed
from imagenetx.models.predict import Classify
from imagenetx.models.run import Plan, Task
from imagenetx.probes.run import ProbeLevels

TASKS = (Classify, ProbeLevels, Attack, Embed)


def _hooks(cls) -> set:
    return {name for name, value in vars(cls).items()
            if not name.startswith("_") and callable(value)}


def test_every_task_overrides_only_task_hooks():
    """One level: a task's public methods are all hooks of ``Task``."""
    hooks = _hooks(Task)
    assert hooks == {"target", "claims", "select", "describe", "record", "start", "passes",
                     "finish"}
    for cls in TASKS:
        extra = set()
        for klass in cls.__mro__[:cls.__mro__.index(Task)]:
            extra |= _hooks(klass) - hooks
        assert not extra, f"{cls.__name__} adds hooks {sorted(extra)}"


@pytest.mark.parametrize("cls", TASKS, ids=lambda c: c.__name__)
def test_no_task_sets_state_outside_init(cls):
    """Attributes of ``self`` are set in ``__init__`` only: what a run
    decides travels in its plan."""
    tree = ast.parse(inspect.getsource(cls))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name != "__init__":
            for sub in ast.walk(node):
                targets = (sub.targets if isinstance(sub, ast.Assign) else
                           [sub.target] if isinstance(sub, (ast.AugAssign, ast.AnnAssign))
                           else [])
                for t in targets:
                    assert not (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                                and t.value.id == "self"), \
                        f"{cls.__name__}.{node.name} sets self.{t.attr}"


def test_plan_totals_sum_numbers_and_join_lists_in_rank_order():
    plan = Plan(summary=None, shares=[{"n": 2, "rows": [1, 2]}, {"n": 3, "rows": [3]}])
    assert plan.totals == {"n": 5, "rows": [1, 2, 3]}
    assert Plan(summary=None).totals == {}


@pytest.mark.parametrize("path", ["imagenetx/models/embed.py", "imagenetx/models/predict.py",
                                  "imagenetx/attacks/run.py", "imagenetx/probes/run.py"])
def test_tasks_write_samples_only_through_the_background_writer(path):
    """No task module writes sample values itself (``set_values``, a
    sample's ``save``): every sample write is a background writer's update
    (a field's description and record are the task's)."""
    from conftest import REPO

    source = (REPO / path).read_text()
    for call in ("set_values(", "set_field(", "sample.save()", "write_raw("):
        assert call not in source, f"{path} calls {call}"


def _spells(tree: ast.AST, value: str) -> bool:
    """Whether code (not a docstring) spells ``value``: as a string, or as
    the constant tail of an f-string's placeholder (``f"{field}_error"``)."""
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == value and id(node) not in docstrings:
            return True
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            if any(isinstance(a, ast.FormattedValue) and isinstance(b, ast.Constant)
                   and b.value == value for a, b in zip(parts, parts[1:])):
                return True
    return False


def test_stored_names_are_spelled_once():
    """The run record keys and the error field's name are spelled in
    store/names.py only."""
    from conftest import REPO

    trees = {str(p.relative_to(REPO)): ast.parse(p.read_text())
             for p in (REPO / "imagenetx").rglob("*.py")}
    for value in ("imagenetx_model", "imagenetx_probe", "_error"):
        where = sorted(path for path, tree in trees.items() if _spells(tree, value))
        assert where == ["imagenetx/store/names.py"], (value, where)
