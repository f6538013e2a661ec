"""Every requirement the spec defines has a test, and every ID a test names exists (traceability).

IDs are defined in spec/*.md as **ID**; a statement with MUST that has no test
fails this check by name.

A test covers the IDs it names only if it can run: one that always skips (a
`skip` mark, `skipif(True)`, or `pytest.skip()` / `pytest.xfail()` reached
unconditionally in its body) names an ID without checking it. A skip under a
condition (no CUDA device, a capability not declared) still covers, since it runs
where the condition holds. The IDs that no test can check through the binding are
listed, each with its reason, in one place: `NOT_OBSERVABLE` in test_wire.py.
"""

import ast
import importlib
import inspect
import pkgutil
import re
import textwrap

import pytest

from .names import SPEC_DIR as SPEC
from .report import id_key
from .test_wire import NOT_OBSERVABLE

#: This package, as it was imported: `conformance` in a checkout, `weightsync.conformance` when installed.
SUITE = importlib.import_module(__package__)
DEFINED = re.compile(r"\*\*([A-Z]+(?:-[A-Z])?-\d+)\*\*")
SKIPPING_CALLS = {"skip", "xfail"}


def spec_ids() -> dict[str, str]:
    """ID -> the text of the statement that defines it."""
    out = {}
    for path in sorted(SPEC.glob("*.md")):
        text = path.read_text()
        for m in DEFINED.finditer(text):
            end = text.find("\n\n", m.end())
            out.setdefault(m.group(1), text[m.start(): end if end > 0 else len(text)])
    return out


def _skips(marks) -> bool:
    """Whether these marks skip whatever carries them, whatever the machine."""
    for m in marks:
        if m.name == "skip":
            return True
        if m.name == "skipif" and m.args and all(a is True for a in m.args):
            return True
    return False


def _req_ids(marks) -> list[str]:
    return [i for m in marks if m.name == "req" for i in m.args]


def _is_skip_call(node: ast.AST) -> bool:
    """`pytest.skip(...)`, `skip(...)`, `pytest.xfail(...)`, or `raise pytest.skip.Exception(...)`."""
    if isinstance(node, ast.Expr):
        node = node.value
    elif isinstance(node, ast.Raise) and node.exc is not None:
        node = node.exc
        if isinstance(node, ast.Call):
            node = node.func
        return isinstance(node, ast.Attribute) and node.attr == "Exception" and _names_skip(node.value)
    else:
        return False
    return isinstance(node, ast.Call) and _names_skip(node.func)


def _names_skip(func: ast.AST) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr in SKIPPING_CALLS and isinstance(func.value, ast.Name) and func.value.id == "pytest"
    return isinstance(func, ast.Name) and func.id in SKIPPING_CALLS


def _body_always_skips(body: list[ast.stmt]) -> bool:
    """A skip reached on every path: a top-level statement of the body, or one inside a `with` there."""
    for stmt in body:
        if _is_skip_call(stmt):
            return True
        if isinstance(stmt, (ast.With, ast.AsyncWith)) and _body_always_skips(stmt.body):
            return True
        if isinstance(stmt, (ast.Return, ast.Raise)):
            return False
    return False


def always_skips(fn) -> bool:
    """Whether test function `fn` skips on every run: by its marks, or by its body."""
    if _skips(getattr(fn, "pytestmark", [])):
        return True
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    node = tree.body[0]
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body_always_skips(node.body)


def _covered_ids(fn, inherited=()) -> tuple[list[str], list[str]]:
    """(IDs `fn` names, IDs it covers), its parametrize cases included."""
    marks = [*inherited, *getattr(fn, "pytestmark", [])]
    named = _req_ids(marks)
    runs = callable(fn) and not _skips(marks) and not (inspect.isfunction(fn) and always_skips(fn))
    covered = list(named) if runs else []
    for m in marks:
        if m.name != "parametrize" or len(m.args) < 2:
            continue
        for p in m.args[1]:
            param_marks = list(getattr(p, "marks", ()))
            ids = _req_ids(param_marks)
            named += ids
            if runs and not _skips(param_marks):
                covered += ids
    return named, covered


def _test_modules():
    for info in pkgutil.iter_modules(SUITE.__path__):
        if not info.name.startswith("test_"):
            continue
        try:
            mod = importlib.import_module(f"{__package__}.{info.name}")
        except pytest.skip.Exception:  # skipped at module level: it covers nothing
            continue
        yield info.name, mod


def ids_named_by_tests(*, covering: bool = False) -> dict[str, list[str]]:
    """ID -> the tests that name it; with `covering`, only the tests that can run."""
    out: dict[str, list[str]] = {}
    for modname, mod in _test_modules():
        module_marks = getattr(mod, "pytestmark", [])
        module_marks = module_marks if isinstance(module_marks, list) else [module_marks]
        for name, obj in vars(mod).items():
            if not name.startswith(("test_", "Test")):
                continue
            found = [_covered_ids(obj, module_marks)]
            if isinstance(obj, type):
                class_marks = [*module_marks, *getattr(obj, "pytestmark", [])]
                found += [_covered_ids(fn, class_marks) for attr, fn in vars(obj).items() if attr.startswith("test")]
            for named, covered in found:
                for i in covered if covering else named:
                    out.setdefault(i, []).append(f"{modname}::{name}")
    return out


def test_every_spec_requirement_has_a_test():
    defined = spec_ids()
    if not defined:
        pytest.skip(f"{SPEC} defines no requirement IDs yet")
    covered = ids_named_by_tests(covering=True)
    untested = sorted(i for i in defined if i not in covered and i not in NOT_OBSERVABLE)
    musts = [i for i in untested if "MUST" in defined[i]]
    assert not musts, f"MUST statements in spec/ with no test that runs: {musts}"
    assert not untested, f"requirements in spec/ with no test that runs: {untested}"


def test_every_tested_id_exists_in_the_spec():
    defined = spec_ids()
    if not defined:
        pytest.skip(f"{SPEC} defines no requirement IDs yet")
    unknown = {i: t for i, t in ids_named_by_tests().items() if i not in defined}
    unknown.update({i: ["test_wire::NOT_OBSERVABLE"] for i in NOT_OBSERVABLE if i not in defined})
    assert not unknown, f"tests name IDs that spec/ does not define: {unknown}"


def test_the_list_of_what_1_1_added_names_defined_requirements():
    """--protocol-version 1.0 leaves out the tests of spec/README.md's 'Added in 1.1' list: it must name real IDs."""
    from .conftest import _added_in_1_1

    added = _added_in_1_1()
    assert added, "spec/README.md's 'Added in 1.1' list is empty"
    unknown = sorted(added - set(spec_ids()))
    assert not unknown, f"spec/README.md lists as added in 1.1 IDs that spec/ does not define: {unknown}"


def test_the_not_observable_list_is_honest():
    """An ID listed as not observable has no running test (else drop it from the list), and is still reported."""
    covered = ids_named_by_tests(covering=True)
    observed = {i: covered[i] for i in NOT_OBSERVABLE if i in covered}
    assert not observed, f"NOT_OBSERVABLE in test_wire.py lists IDs that running tests check: {observed}"
    named = ids_named_by_tests()
    unreported = sorted(i for i in NOT_OBSERVABLE if i not in named)
    assert not unreported, f"IDs in NOT_OBSERVABLE that no test reports as skipped: {unreported}"


def test_an_unconditional_skip_covers_nothing():
    """The rule above, on examples: marks and body skips count, conditional skips do not."""

    @pytest.mark.req("X-1")
    def top():
        """Docstring first."""
        pytest.skip("never runs")

    @pytest.mark.req("X-1")
    def in_with():
        with open(__file__):
            pytest.skip("never runs")

    @pytest.mark.req("X-1")
    def conditional(flag=False):
        if flag:
            pytest.skip("runs where flag is false")
        assert True

    @pytest.mark.skip(reason="never runs")
    @pytest.mark.req("X-1")
    def marked():
        pass

    @pytest.mark.skipif(True, reason="never runs")
    @pytest.mark.req("X-1")
    def marked_true():
        pass

    @pytest.mark.parametrize("x", [pytest.param(1, marks=[pytest.mark.req("X-1"), pytest.mark.skip]),
                                   pytest.param(2, marks=pytest.mark.req("X-2"))])
    def params(x):
        pass

    assert [_covered_ids(f)[1] for f in (top, in_with, marked, marked_true)] == [[], [], [], []]
    assert _covered_ids(conditional) == (["X-1"], ["X-1"])
    assert _covered_ids(params) == (["X-1", "X-2"], ["X-2"])


# ---- the clause inventory (spec/clauses/): each clause of a requirement, and the tests that make it true ----


def _covering_tests() -> dict[str, set[str]]:
    """`test_x.py::test_y` -> the IDs it covers (runs and names)."""
    out: dict[str, set[str]] = {}
    for i, names in ids_named_by_tests(covering=True).items():
        for n in names:
            module, _, fn = n.partition("::")
            out.setdefault(f"{module}.py::{fn}", set()).add(i)
    return out


def test_the_clause_inventory_splits_every_requirement_and_only_those():
    from .clauses import load

    clauses = load()
    defined = spec_ids()
    unknown = sorted({c.requirement for c in clauses.values()} - set(defined))
    assert not unknown, f"spec/clauses/ splits requirements spec/ does not define: {unknown}"
    unsplit = sorted(set(defined) - {c.requirement for c in clauses.values()}, key=id_key)
    assert not unsplit, f"requirements with no clause in spec/clauses/: {unsplit}"


def test_every_clause_names_tests_that_exist_and_name_its_requirement():
    """A clause's tests are real, and each names the clause's requirement, so that its failure blames that ID."""
    from .clauses import STATE_MACHINE, load
    from .names import STATE_MACHINE_RULES

    covering = _covering_tests()
    wrong = []
    for cid, c in load().items():
        for entry in c.tests:
            if entry.startswith(STATE_MACHINE):
                rule = entry[len(STATE_MACHINE):]
                if rule not in STATE_MACHINE_RULES:
                    wrong.append(f"{cid}: no state-machine rule {rule!r}")
                continue
            ids = covering.get(entry.partition("[")[0])
            if ids is None:
                wrong.append(f"{cid}: no test {entry} that runs")
            elif c.requirement not in ids:
                wrong.append(f"{cid}: {entry} does not name {c.requirement} (it names {sorted(ids)})")
    assert not wrong, "spec/clauses/ lists tests that do not check the clause:\n" + "\n".join(wrong)


def test_every_clause_has_a_test_or_says_why_not():
    """A clause without a test is a clause whose condition no test makes true: the inventory says so, with the
    reason (`gap`: not yet; `unobservable`: not through the binding; `reference`: a choice of the reference alone,
    checked by its own tests), and a clause with tests claims no gap."""
    from .clauses import load

    silent, stale = [], []
    for cid, c in load().items():
        if not c.tests and not (c.gap or c.unobservable or c.reference):
            silent.append(cid)
        if c.tests and (c.unobservable or c.gap or c.reference):
            stale.append(cid)
    assert not silent, f"clauses with no test and no reason in spec/clauses/: {silent}"
    assert not stale, f"clauses that list tests yet say no test makes them true (gap, unobservable, reference): {stale}"
