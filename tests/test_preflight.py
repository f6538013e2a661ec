"""A program that cannot start is a usage error of the run, not a suite of inconclusive tests (issue 39).

`--receiver-cmd` and `--sender-cmd` start the program once before any test (conformance/preflight.py): one that
exits, or cannot be started at all, before it joins the scripted sender (a receiver) or prints its first line (a
sender) stops the run with exit status 4, its command and the end of its standard error, and no test runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
USAGE_EXIT = 4
INCONCLUSIVE_EXIT = 6  # conformance/conftest.py
#: How long the suite may take to refuse a program that exits at once (pytest's start included).
REFUSED_WITHIN = 10.0
#: The last of the noise lines the failing program writes before its import error: the report keeps the tail.
NOISE = 40


def run_suite(option: str, program: str, *extra: str, timeout: float = 90.0) -> tuple[int | None, str, float]:
    """The suite in a subprocess as a user runs it in program mode: (exit status or None if killed, output, s)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "reference"), str(ROOT)]))
    cmd = [sys.executable, "-m", "pytest", "conformance", "-p", "no:cacheprovider", option, program, *extra]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the run, its xdist workers and the programs they started
        out, _ = proc.communicate()
        out += f"\n---- killed after {timeout:.0f} s"
        rc = None
    return rc, out, time.monotonic() - t0


@pytest.fixture
def broken(tmp_path) -> Path:
    """A program that writes NOISE lines to stderr, then fails to import a module and exits with status 1."""
    path = tmp_path / "broken.py"
    path.write_text("import sys\n"
                    f"for i in range({NOISE}):\n"
                    "    print(f'noise line {i}', file=sys.stderr)\n"
                    "import numpy_that_is_not_installed  # noqa: F401\n")
    return path


def _refused(rc, out: str, elapsed: float, *shown: str) -> None:
    assert rc == USAGE_EXIT, f"exit {rc} after {elapsed:.1f} s, not {USAGE_EXIT}:\n{out[-4000:]}"
    assert elapsed < REFUSED_WITHIN, f"refused after {elapsed:.1f} s:\n{out[-4000:]}"
    for text in shown:
        assert text in out, f"{text!r} not shown:\n{out[-4000:]}"
    assert "passed" not in out and "inconclusive" not in out and "gap in the suite" not in out, out[-4000:]


@pytest.mark.parametrize("option, args", [("--receiver-cmd", "{url}"), ("--sender-cmd", "{layout} {receivers}")])
def test_a_program_that_exits_before_it_speaks_is_a_usage_error(broken, option, args):
    program = f"{sys.executable} {broken} {args}"
    rc, out, elapsed = run_suite(option, program)
    _refused(rc, out, elapsed, program, "status 1", "ModuleNotFoundError: No module named 'numpy_that_is_not_installed'",
             f"noise line {NOISE - 1}")
    assert "noise line 0\n" not in out, "the whole of its standard error, not its last lines:\n" + out[-4000:]


@pytest.mark.parametrize("option, args", [("--receiver-cmd", "{url}"), ("--sender-cmd", "{layout} {receivers}")])
def test_a_program_that_cannot_be_started_is_a_usage_error(option, args):
    program = f"python3.99-not-installed {args}"
    rc, out, elapsed = run_suite(option, program)
    _refused(rc, out, elapsed, program, "cannot be started", "python3.99-not-installed")


def test_a_command_not_found_by_its_shell_is_a_usage_error():
    """A wrapper shell that cannot find the program prints `...: not found` and exits 127 before anything else."""
    program = "sh -c 'python3.99-not-installed \"$0\"' {url}"
    rc, out, elapsed = run_suite("--receiver-cmd", program)
    _refused(rc, out, elapsed, "status 127", "python3.99-not-installed: not found")


@pytest.mark.processes  # waits out a bound, which the machine's load stretches
def test_a_program_that_never_speaks_is_a_usage_error_after_the_start_bound():
    """Neither joining nor exiting: refused after the bound every test gives a program to start (60 s at
    timescale 1; 3 s here), instead of every test waiting it out."""
    rc, out, elapsed = run_suite("--sender-cmd", "sh -c 'exec sleep 600' {layout} {receivers}",
                                  "--conformance-timescale=0.05")
    assert rc == USAGE_EXIT, f"exit {rc} after {elapsed:.1f} s:\n{out[-4000:]}"
    assert "did not print its first line within" in out and "--conformance-timescale" in out, out[-4000:]
    assert elapsed < 60, f"refused after {elapsed:.1f} s:\n{out[-4000:]}"


@pytest.mark.processes  # runs a test of the suite
def test_a_program_that_spoke_then_exited_is_judged_by_the_tests():
    """Once it spoke, the start check is done: a program that exits where an answer is due is the tests' to judge."""
    rc, out, elapsed = run_suite("--sender-cmd", "sh -c 'echo url 0 unix:@nowhere; exit 1' {layout} {receivers}",
                                 "-k", "test_a_joined_receiver_gets_the_layout_and_version_0", "-n", "0")
    assert rc == INCONCLUSIVE_EXIT and "1 inconclusive" in out, f"exit {rc} after {elapsed:.1f} s:\n{out[-4000:]}"
    assert "exited (status 1) instead of answering" in out, out[-4000:]
