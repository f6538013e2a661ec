"""The conformance suite, judged: it passes the reference and fails every mutant, naming what it broke.

Each mutant in tests/mutants/ breaks one requirement (its `VIOLATES`). The
suite runs in a subprocess, exactly as a user runs it, and its closing line
"requirements violated: ..." must name that requirement. A mutant that
survives is a gap in the suite: strengthen the suite, never drop the mutant.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
MUTANTS_DIR = Path(__file__).resolve().parent / "mutants"
MUTANTS = sorted(p.stem for p in MUTANTS_DIR.glob("*.py") if not p.stem.startswith("_"))
VIOLATED_LINE = re.compile(r"^requirements violated: (.*)$", re.M)
#: The default profile of the whole suite, with room for a loaded machine.
SUITE_TIMEOUT = 900


def violates(name: str) -> str:
    m = re.search(r'^VIOLATES = "([^"]+)"', (MUTANTS_DIR / f"{name}.py").read_text(), re.M)
    assert m, f"tests/mutants/{name}.py has no VIOLATES = \"ID\""
    return m.group(1)


def run_suite(impl: str, *extra: str) -> tuple[int, str, list[str]]:
    """The suite in a subprocess, as a user runs it; returns (exit code, output, IDs it names violated)."""
    env = dict(os.environ)
    # Spawned receiver processes import the mutant by name too.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "conformance", f"--impl={impl}", "-q", "-p", "no:cacheprovider",
         "--conformance-profile=ci", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUITE_TIMEOUT,
    )
    out = proc.stdout + proc.stderr
    m = VIOLATED_LINE.search(out)
    named = [] if m is None or m.group(1) == "none" else m.group(1).split(", ")
    return proc.returncode, out, named


def test_every_mutant_declares_its_requirement():
    assert len(MUTANTS) >= 10
    for name in MUTANTS:
        rid = violates(name)
        doc = (MUTANTS_DIR / f"{name}.py").read_text().split('"""')[1]
        assert rid in doc, f"tests/mutants/{name}.py: the docstring does not name {rid}"


@pytest.mark.timeout(SUITE_TIMEOUT + 60)
def test_suite_passes_the_reference():
    rc, out, named = run_suite("weightsync")
    assert rc == 0, f"the conformance suite fails the reference (exit {rc}):\n{out[-6000:]}"
    assert not named


@pytest.mark.slow  # the slow layer: .ci/run runs it after the README's command, over two processes
@pytest.mark.timeout(SUITE_TIMEOUT + 60)
@pytest.mark.parametrize("name", MUTANTS)
def test_suite_kills_mutant(name):
    rid = violates(name)
    rc, out, named = run_suite(f"tests.mutants.{name}")
    assert rc == 1, f"mutant {name} ({rid}) survived or broke the run (exit {rc}):\n{out[-6000:]}"
    # A mutant that no longer fits the reference's internals fails for the wrong reason.
    assert "AttributeError" not in out and "NameError" not in out, f"mutant {name} is out of date:\n{out[-6000:]}"
    assert rid in named, f"mutant {name} breaks {rid}, but the suite names {named or 'nothing'}:\n{out[-6000:]}"


def test_unknown_impl_fails_at_once():
    code, out, _ = run_suite("no_such_module_xyz")
    assert code == 4, out[-2000:]
    assert "--impl=no_such_module_xyz: cannot import it" in out
    assert "Traceback" not in out


def test_module_missing_a_name_fails_at_once():
    code, out, _ = run_suite("json")
    assert code == 4, out[-2000:]
    assert "does not expose the weightsync binding: missing Sender" in out
