"""The suite as a stranger runs it: `python -m weightsync.conformance` from a directory with no checkout.

CI runs the whole suite so from a wheel installed in a clean venv (.ci/run); these check the runner itself: it
ignores the pytest settings of the directory it starts in, writes nothing into the install, names the spec
version, and a module that lacks a name of the binding is a usage error (exit 4) with a clear message.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from importlib.metadata import version as ws_version
from pathlib import Path

import pytest

import conformance

pytestmark = pytest.mark.processes  # each starts the suite in a subprocess (seconds)
SUITE = Path(conformance.__file__).resolve().parent
ONE_TEST = "test_wire.py::test_slot_handles_are_read_only_and_sealed"


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(cwd)  # the stranger's own module, and nothing of this checkout
    return subprocess.run([sys.executable, "-m", "weightsync.conformance", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180)


def test_the_installed_suite_runs_from_any_directory_with_its_own_settings(tmp_path):
    # A project whose pytest settings would deselect everything: the suite must not read them.
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-k no_such_test"\n')
    r = _run(tmp_path, "--impl=weightsync", ONE_TEST, "-n", "0", "--conformance-json=report.json")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "weightsync conformance: checks protocol 1.1" in r.stdout
    assert "1 passed" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["schema"].startswith("weightsync-conformance-report/") and data["spec_version"] == "1.1"
    assert data["suite"]["version"] == ws_version("weightsync") and len(data["suite"]["digest"]) == 16, data["suite"]
    row = data["requirements"]["SEC-4"]
    assert row["status"] == "passed" and row["spec"] == "13-security.md#SEC-4" and row["text"]
    assert not (tmp_path / ".pytest_cache").exists() and not (SUITE / ".pytest_cache").exists()


def test_a_module_missing_a_name_of_the_binding_is_a_usage_error(tmp_path):
    (tmp_path / "halfdone.py").write_text("CAPABILITIES = frozenset({'push'})\nclass Sender: pass\n")
    r = _run(tmp_path, "--impl=halfdone", "-n", "0")
    assert r.returncode == 4, r.stdout[-2000:] + r.stderr[-2000:]
    err = r.stderr + r.stdout
    assert "--impl=halfdone does not expose the weightsync binding: missing Receiver" in err, err[-2000:]
    assert "Traceback" not in err


def test_a_run_stopped_by_sigterm_still_writes_its_report(tmp_path):
    """SIGTERM (a CI job's time limit, `timeout`) ends the run as Ctrl-C does: the JSON of what ran is written."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    report = tmp_path / "report.json"
    proc = subprocess.Popen([sys.executable, "-m", "weightsync.conformance", "--impl=weightsync", "-n", "0", "-v",
                             "test_traceability.py", "test_state_machine.py::test_protocol_state_machine",
                             f"--conformance-json={report}"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    out = []
    try:
        for line in proc.stdout:  # stopped once the first test has passed: the others are still to run
            out.append(line)
            if " PASSED" in line:
                break
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    out.append(rest)
    data = json.loads(report.read_text())
    assert data["interrupted"] is True, "".join(out)[-2000:]
    ran = [n for n, t in data["tests"].items() if t["outcome"] == "passed"]
    assert ran and len(ran) < 1 + 5, (ran, "".join(out)[-2000:])  # what ran, not the 6 tests asked for


def test_the_conformance_page_states_the_suites_test_count():
    """docs/conformance.md says how many tests the suite runs against the reference: the number it collects."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "conformance.md").read_text()
    stated = re.search(r"against the reference runs (\d+) tests", page)
    assert stated, "docs/conformance.md no longer states the suite's test count"
    r = subprocess.run([sys.executable, "-m", "pytest", "conformance", "--collect-only", "-q", "-n", "0", "-p",
                        "no:cacheprovider"], cwd=SUITE.parent, capture_output=True, text=True, timeout=180)
    collected = re.search(r"(\d+) tests? collected", r.stdout)
    assert collected, r.stdout[-2000:]
    assert int(stated.group(1)) == int(collected.group(1)), (
        f"docs/conformance.md says {stated.group(1)} tests; the suite collects {collected.group(1)}")
