"""Each test's outcome in the suite's own words, gathered for the report, and the run's exit status.

A failed check becomes a verdict here (verdict.py): violated, inconclusive (shown as a skip with its own status,
so it neither fails the run nor stops -x), or xfail for a gap the user listed. The run is spread over processes
by pytest-xdist, so outcomes are gathered from `pytest_runtest_logreport`, which the controlling process sees
for every test whichever process ran it.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from . import clauses as inventory
from . import timing as tm
from .names import NOT_DECLARED
from .recheck import RECHECKED
from .report import RANK
from .selection import IDS, LACKS, LISTED
from .subject import judged, program_of
from .verdict import CHECKED_NOTHING, INCONCLUSIVE, NOT_IMPLEMENTED, PASSED, SKIPPED, VIOLATED, XFAIL, XPASS

#: The exit status of a run with no violation and at least one inconclusive test.
INCONCLUSIVE_EXIT = 6


def configure(config) -> None:
    """Gather the outcomes in this process (the report is written by the controlling one)."""
    config.pluginmanager.register(Outcomes(config), "weightsync-conformance-outcomes")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Each report carries the test's requirement IDs and, when it did not pass, its verdict.

    An inconclusive failure becomes a skip with its own status (INCONCLUSIVE), so it neither
    fails the run nor stops -x; the terminal summary lists it with its reason."""
    rep = yield
    rep.conformance_ids = item.stash.get(IDS, [])
    rep.conformance_clauses = inventory.take()  # the clause conditions the harness saw during this phase
    _, known_ids = item.config._conformance_xfails
    listed = item.stash.get(LISTED, False)
    if rep.failed and call.excinfo is not None:
        j = judged(call.excinfo.value, item.config)
        later = item.config._conformance_later
        if j.kind == VIOLATED and j.ids and set(j.ids) <= later:
            # Only requirements 1.1 added, against an implementation of 1.0 (the state machine's core rules).
            rep.conformance = {"outcome": XFAIL, "blamed": list(j.ids), "reason": j.reason}
            rep.outcome = "skipped"
            rep.wasxfail = f"added in protocol 1.1, not judged for --protocol-version 1.0: {j.reason}"[:400]
        elif j.kind == VIOLATED and (listed or (j.ids and set(j.ids) <= known_ids)):
            # A gap the user listed: it ran and failed as expected; shown as xfail, it fails nothing.
            rep.conformance = {"outcome": XFAIL, "blamed": list(j.ids), "reason": j.reason}
            rep.outcome = "skipped"
            rep.wasxfail = f"known gap (--xfails-file): {j.reason}"[:400]
        elif j.kind == VIOLATED:
            rep.conformance = {"outcome": VIOLATED, "blamed": list(j.ids), "reason": j.reason,
                               "details": rep.longreprtext[-4000:]}
        else:
            if j.kind == INCONCLUSIVE:
                reason = j.reason
            elif RECHECKED in item.stash:
                reason = (f"a bound missed ({item.stash[RECHECKED]}) and missed again at timescale "
                          f"{tm.SCALE * tm.RECHECK:g} ({j.reason}), but the check names no requirement")
            else:
                reason = f"a bound missed during {call.when}, where nothing is re-checked: {j.reason}"
            rep.conformance = {"outcome": INCONCLUSIVE, "blamed": [], "reason": f"{call.when}: {reason}",
                               "details": rep.longreprtext[-4000:]}
            rep.outcome = "skipped"
            rep.longrepr = (str(item.path), item.location[1] + 1, f"inconclusive: {reason}")
    elif rep.passed and call.when == "call" and listed:
        rep.conformance = {"outcome": XPASS, "blamed": [], "reason": "listed in --xfails-file, and passed"}
        rep.wasxfail = "listed in --xfails-file"
    elif rep.skipped and f"{CHECKED_NOTHING}: " in _skip_reason(rep):  # verdict.checked_nothing
        rep.conformance = {"outcome": CHECKED_NOTHING, "blamed": [],
                           "reason": _skip_reason(rep).partition(f"{CHECKED_NOTHING}: ")[2]}
    elif rep.skipped:
        # A capability not declared, or (program mode) a part of the binding a program does not have.
        missing = item.stash.get(LACKS, []) or program_of(item.config) or \
            NOT_DECLARED.partition("{")[0] in _skip_reason(rep)  # names.lacking, at run time
        rep.conformance = {"outcome": NOT_IMPLEMENTED if missing else SKIPPED, "blamed": [], "reason": _skip_reason(rep)}
    return rep


def _skip_reason(rep) -> str:
    return rep.longrepr[2] if isinstance(rep.longrepr, tuple) and len(rep.longrepr) == 3 else str(rep.longrepr)


def pytest_report_teststatus(report, config):
    c = getattr(report, "conformance", None)
    if c and c["outcome"] == INCONCLUSIVE:
        return "inconclusive", "i", "INCONCLUSIVE"
    if c and c["outcome"] == NOT_IMPLEMENTED:  # one vocabulary: pytest's own lines say it too, never "skipped"
        return "not implemented", "n", "NOT IMPLEMENTED"
    if c and c["outcome"] == CHECKED_NOTHING:
        return "checked nothing", "c", "CHECKED NOTHING"
    return None


class Outcomes:
    """Each test's outcome, gathered in the controlling process from every report, whichever process ran it."""

    def __init__(self, config):
        self.tests: dict[str, dict] = {}
        self.timing: dict[str, tuple[float, str]] = {}  # seconds (setup, call, teardown), and which process
        self.seen: dict[str, list[str]] = defaultdict(list)  # clause -> the tests in which its condition occurred
        config._conformance_tests = self.tests
        config._conformance_timing = self.timing
        config._conformance_seen = self.seen

    def pytest_runtest_logreport(self, report):
        for clause in getattr(report, "conformance_clauses", ()):
            self.seen[clause].append(report.nodeid)
        node = getattr(report, "node", None)  # under xdist, the worker that ran it
        spent, _ = self.timing.get(report.nodeid, (0.0, ""))
        self.timing[report.nodeid] = (spent + report.duration, getattr(getattr(node, "gateway", None), "id", "main"))
        c = getattr(report, "conformance", None)
        if c is not None:
            outcome = c["outcome"]
        elif report.passed and report.when == "call":
            outcome = PASSED
        else:
            return
        t = self.tests.setdefault(report.nodeid, {"ids": list(getattr(report, "conformance_ids", [])),
                                                  "outcome": None, "blamed": [], "reason": None})
        if report.user_properties:  # e.g. the state machine's count of examples
            t.setdefault("properties", {}).update(dict(report.user_properties))
        if t["outcome"] is None or RANK[outcome] > RANK[t["outcome"]]:
            t.update(outcome=outcome, blamed=(c or {}).get("blamed", []), reason=(c or {}).get("reason"),
                     details=(c or {}).get("details"))


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput"):
        return
    outcomes = {t["outcome"] for t in session.config._conformance_tests.values()}
    if VIOLATED in outcomes and exitstatus in (0, 1, 2):  # 2: -x stopped an xdist run
        session.exitstatus = 1
    elif INCONCLUSIVE in outcomes and exitstatus in (0, 1):
        session.exitstatus = INCONCLUSIVE_EXIT
