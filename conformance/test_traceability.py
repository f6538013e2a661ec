"""Every requirement the spec defines has a test, and every ID a test names exists (traceability).

IDs are defined in spec/*.md as **ID**; a statement with MUST that has no test
fails this check by name.
"""

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import conformance

SPEC = Path(__file__).resolve().parent.parent / "spec"
DEFINED = re.compile(r"\*\*([A-Z]+(?:-[A-Z])?-\d+)\*\*")


def spec_ids() -> dict[str, str]:
    """ID -> the text of the statement that defines it."""
    out = {}
    for path in sorted(SPEC.glob("*.md")):
        text = path.read_text()
        for m in DEFINED.finditer(text):
            end = text.find("\n\n", m.end())
            out.setdefault(m.group(1), text[m.start(): end if end > 0 else len(text)])
    return out


def _marks(obj) -> list:
    marks = list(getattr(obj, "pytestmark", []))
    out = []
    for m in marks:
        if m.name == "req":
            out.extend(m.args)
        elif m.name == "parametrize":
            for p in m.args[1] if len(m.args) > 1 else []:
                for pm in getattr(p, "marks", ()):
                    if pm.name == "req":
                        out.extend(pm.args)
    return out


def ids_named_by_tests() -> dict[str, list[str]]:
    """ID -> the tests that name it, from every conformance test module."""
    out: dict[str, list[str]] = {}
    for info in pkgutil.iter_modules(conformance.__path__):
        if not info.name.startswith("test_"):
            continue
        mod = importlib.import_module(f"conformance.{info.name}")
        for name, obj in vars(mod).items():
            if not name.startswith(("test_", "Test")):
                continue
            ids = _marks(obj)
            if isinstance(obj, type):
                for attr, fn in vars(obj).items():
                    if attr.startswith("test"):
                        ids += _marks(fn)
            for i in ids:
                out.setdefault(i, []).append(f"{info.name}::{name}")
    return out


def test_every_spec_requirement_has_a_test():
    defined = spec_ids()
    if not defined:
        pytest.skip(f"{SPEC} defines no requirement IDs yet")
    tested = ids_named_by_tests()
    untested = sorted(i for i in defined if i not in tested)
    musts = [i for i in untested if "MUST" in defined[i]]
    assert not musts, f"MUST statements in spec/ with no test: {musts}"
    assert not untested, f"requirements in spec/ with no test: {untested}"


def test_every_tested_id_exists_in_the_spec():
    defined = spec_ids()
    if not defined:
        pytest.skip(f"{SPEC} defines no requirement IDs yet")
    unknown = {i: t for i, t in ids_named_by_tests().items() if i not in defined}
    assert not unknown, f"tests name IDs that spec/ does not define: {unknown}"
