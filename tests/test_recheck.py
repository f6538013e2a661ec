"""The suite's re-check end to end (conformance/recheck.py): a check that failed only on time runs again with
larger bounds, after what its first run left is cleaned up; held then, it is inconclusive; missed again, it is a
violation of what it names. A wrong value is never re-run. The tests below run under the suite's own plugins.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CHECKS = '''
import json, os
import pytest
from conformance import timing as tm
from conformance.verdict import TooSlow

def _log(request):
    return os.path.join(os.environ["RECHECK_LOG"], request.node.name + ".json")

def _add(path, entry):
    runs = json.load(open(path)) if os.path.exists(path) else []
    with open(path, "w") as f:
        json.dump(runs + [entry], f)
    return runs + [entry]

class Peer:
    def __init__(self, path):
        self.path = path
    def close(self):
        _add(self.path, "closed")

@pytest.mark.req("SEND-2")
def test_slow_once(closing, request):
    runs = _add(_log(request), tm.SCALE)
    closing(Peer(_log(request)))
    if len([r for r in runs if r != "closed"]) == 1:
        raise TooSlow("SEND-2 violated: send took longer than its timeout")

@pytest.mark.req("SEND-2")
def test_slow_always(request):
    _add(_log(request), tm.SCALE)
    raise TooSlow("SEND-2 violated: send took longer than its timeout")

@pytest.mark.req("SEND-2")
def test_wrong_value(request):
    _add(_log(request), tm.SCALE)
    raise AssertionError("SEND-2 violated: the receiver read version 1, not 2")
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One run of the checks above under the suite's plugins: its JSON report and what each run of a test saw."""
    tmp = tmp_path_factory.mktemp("recheck")
    (tmp / "test_checks.py").write_text(CHECKS)
    log = tmp / "log"
    log.mkdir()
    env = dict(os.environ, RECHECK_LOG=str(log), PYTHONPATH=os.pathsep.join([str(ROOT / "reference"), str(ROOT)]))
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "conformance.conftest", "test_checks.py", "-n", "0",
                        "-p", "no:cacheprovider", f"--rootdir={tmp}", "--impl=weightsync", "--conformance-timescale=1",
                        "--conformance-json=report.json"], cwd=tmp, env=env, capture_output=True, text=True,
                       timeout=240)
    assert (tmp / "report.json").exists(), r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads((tmp / "report.json").read_text())
    tests = {n.rpartition("::")[2]: t for n, t in report["tests"].items()}
    runs = {p.stem: json.loads(p.read_text()) for p in log.glob("*.json")}
    return r, report, tests, runs


pytestmark = pytest.mark.processes  # one run of pytest in a subprocess (seconds: it imports torch)


def test_held_at_the_larger_timescale_is_inconclusive_and_the_first_run_is_cleaned_up_first(run):
    _, _, tests, runs = run
    t, seen = tests["test_slow_once"], runs["test_slow_once"]
    first, cleaned, *rest = seen
    assert cleaned == "closed", seen  # the first run's peers closed before the test ran again
    again = [s for s in rest if s != "closed"][-1]  # the run that held
    if t["outcome"] == "passed":  # the machine got busier during the run: re-run at the timescale it had then
        assert t["properties"]["timescale_measured_during_the_test"] == again > first, (t, seen)
    else:
        assert t["outcome"] == "inconclusive", t
        assert again >= first * 3.0 * 0.999, seen  # timing.RECHECK times every bound, or more on a busier machine
        assert f"re-checked at timescale {again:g}, it held" in t["reason"], t["reason"]


def test_missed_again_is_a_violation_of_what_it_names(run):
    _, _, tests, runs = run
    t = tests["test_slow_always"]
    assert len(runs["test_slow_always"]) >= 2, runs  # re-run, at larger bounds each time
    assert runs["test_slow_always"][-1] > runs["test_slow_always"][0], runs
    if t["outcome"] == "inconclusive":  # only when the machine measured after it was far busier than allowed
        assert "far busier" in t["reason"], t
    else:
        assert (t["outcome"], t["blamed"]) == ("violated", ["SEND-2"]), t
        assert "missed again when re-checked at timescale" in t["reason"] + t["details"], t


def test_a_wrong_value_is_judged_at_once(run):
    r, _, tests, runs = run
    assert runs["test_wrong_value"] == [runs["test_wrong_value"][0]], runs  # never re-run
    t = tests["test_wrong_value"]
    assert (t["outcome"], t["blamed"]) == ("violated", ["SEND-2"]), t
    assert r.returncode == 1, r.stdout[-2000:]
