"""The suite's bounds are read when they are used, never frozen by import (conformance/timing.py).

The timescale changes during a run: configure sets it from the machine's measure, and the re-check raises it for
one test (timing.scaled). A bound copied when a module is imported (`from .timing import T`, `LIMIT = tm.T`, a
default argument `timeout=tm.T`, a decorator's argument), or a bound of timing.py rebound from outside
(`tm.TEST_BUDGET = x`), keeps an old value through the re-check. Each reader reads `tm.T` as it waits.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conformance import timing as tm

ROOT = Path(__file__).resolve().parent.parent


def _timing_names(tree: ast.Module) -> set[str]:
    """The names a module binds to conformance/timing.py (`from . import timing as tm`, `import ...timing as t`)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names if a.name == "timing"}
        elif isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.name.endswith(".timing") and a.asname}
    return names


def _at_import(node: ast.AST):
    """The nodes of `node` evaluated when its module is imported: everything but function and lambda bodies."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        args = node.args
        outer = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        if not isinstance(node, ast.Lambda):
            outer += node.decorator_list
        for n in outer:
            yield from _at_import(n)
        return
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _at_import(child)


def _frozen(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text())
    names = _timing_names(tree)
    where = path.relative_to(root)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("timing"):
            found += [f"{where}:{node.lineno}: imports {a.name} by name" for a in node.names if a.name.isupper()]
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr.isupper()
                and isinstance(node.value, ast.Name) and node.value.id in names):
            found.append(f"{where}:{node.lineno}: rebinds {node.value.id}.{node.attr} from outside timing.py")
    for node in _at_import(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr.isupper()
                and isinstance(node.value, ast.Name) and node.value.id in names):
            found.append(f"{where}:{node.lineno}: reads {node.value.id}.{node.attr} at import")
    return found


def test_no_module_copies_a_bound_at_import_or_rebinds_one():
    paths = sorted([*ROOT.joinpath("conformance").rglob("*.py"), *ROOT.joinpath("tests").rglob("*.py")])
    frozen = [f for p in paths for f in _frozen(p)]
    assert not frozen, "bounds frozen at import or rebound (read them as tm.T when used; set them with " \
                       f"timing.set_scale and timing.set_budget): {frozen}"


def test_the_check_finds_each_way_of_freezing_a_bound(tmp_path):
    """The check above is honest: it finds each form, and passes what reads at call time."""
    bad = tmp_path / "frozen.py"
    bad.write_text("from . import timing as tm\nfrom .timing import T\nLIMIT = tm.SLACK\n"
                   "def wait(timeout=tm.SHORT):\n    return tm.BOUND\n"
                   "@decorate(tm.REACTION)\ndef f():\n    tm.TEST_BUDGET = 1\n"
                   "g = lambda: tm.START_BOUND\n")
    found = _frozen(bad, tmp_path)
    assert [f.partition(": ")[2] for f in found] == [
        "imports T by name", "rebinds tm.TEST_BUDGET from outside timing.py", "reads tm.SLACK at import",
        "reads tm.SHORT at import", "reads tm.REACTION at import"], found


def test_every_bound_is_computed_from_the_current_timescale_when_read():
    kept = sorted({"SCALE", "TEST_BUDGET", *tm.BASE} & set(vars(tm)))
    assert not kept, f"bounds kept as module globals of timing.py (a copy of one falls behind): {kept}"
    scale, budget = tm.SCALE, tm.TEST_BUDGET
    try:
        tm.set_scale(2.0)
        tm.set_budget(10.0)
        assert (tm.SCALE, tm.T, tm.SLACK, tm.TEST_BUDGET) == (2.0, 2 * tm.BASE["T"], 2 * tm.BASE["SLACK"], 10.0)
        with tm.scaled(3.0):  # the re-check
            assert (tm.SCALE, tm.T) == (6.0, 6 * tm.BASE["T"])
            assert tm.budget() == pytest.approx(10.0 * 6.0 * (1 + tm.RECHECK))
        assert (tm.SCALE, tm.T) == (2.0, 2 * tm.BASE["T"])
        assert (tm.EARLY, tm.FRAME_BOUND) == (0.05, 10.0)  # never scaled
    finally:
        tm.set_scale(scale)
        tm.set_budget(budget)
    with pytest.raises(AttributeError):
        tm.NO_SUCH_BOUND  # noqa: B018
