"""What a run tells its reader: the header, the terminal summary and the JSON report.

The controlling process writes them from the outcomes it gathered (outcomes.Outcomes); report.py makes the
requirement table and its lines, this module puts them on the terminal and in the file. xdist's workers write
nothing: the controlling process reports the whole run.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

from . import clauses as inventory
from . import report as reporting
from . import timing as tm
from .names import ROLES, SPEC_DIR
from .outcomes import INCONCLUSIVE_EXIT
from .subject import impl, program_of, role_of
from .verdict import CHECKED_NOTHING, INCONCLUSIVE, NOT_IMPLEMENTED, PASSED, SKIPPED, VIOLATED, XFAIL, XPASS

#: The protocol version of the spec this suite checks (its title, spec/README.md).
SPEC_VERSION = reporting.spec_version(SPEC_DIR)


def pytest_report_header(config):
    if hasattr(config, "workerinput"):
        return None
    return header(config)


def header(config) -> list[str]:
    """The spec this run checks and the seed it draws its examples from."""
    seed = config.getoption("hypothesis_seed")
    db = getattr(config, "_conformance_replay", None)
    examples = f"examples drawn afresh from seed {seed} (run again with --hypothesis-seed={seed})"
    if db is not None:
        examples += f"; first replaying the {db.saved()} saved in {db.folder} (--conformance-replay)"
    judged = config.getoption("--protocol-version")
    return [f"weightsync conformance: checks protocol {SPEC_VERSION}"
            + (f", judging as {judged}" if judged != SPEC_VERSION else "") + f" (the spec: {SPEC_DIR})",
            f"weightsync conformance: {examples}"]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controlling process reports the whole run
    write(terminalreporter, exitstatus, config)


def write(tr, exitstatus, config) -> None:
    """The run's summary on the terminal, and the JSON report when --conformance-json asks for it."""
    rows = _table(config)  # empty when no test that ran names a requirement: still reported, JSON included
    program = program_of(config)
    role = role_of(config)
    if program:
        # The subject is a program; the suite's scripted peers play the other side.
        tr.section(f"weightsync conformance: {role} program {program!r}")
        other = "trainer: the suite's scripted sender" if role == "receiver" else \
            "workers: the suite's scripted receivers"
        tr.write_line(f"{other} (conformance/peers.py)")
        caps: list[str] = []
    else:
        tr.section(f"weightsync conformance: {config.getoption('--impl')}" + (f" ({role} only)" if role else ""))
        caps = sorted(impl(config).CAPABILITIES)
        tr.write_line(f"capabilities declared: {', '.join(caps) or '(none)'}")
        if role:
            tr.write_line("the other role: the suite's scripted " + ("sender" if role == "receiver" else "receivers")
                          + " (conformance/peers.py); its requirements are not implemented here")
    m = config._conformance_measure
    tr.write_line(f"timescale {tm.SCALE:g} (machine load {m.get('load', 0):.1f}, round trip "
                  f"{m.get('rtt_ms', 0):.2f} ms; given {m.get('timescale_given', 1):g})")
    for line in header(config):
        tr.write_line(line)
    tr.write_line("")
    tr.write_line(reporting.LEGEND)
    for line in reporting.table_lines(rows):
        tr.write_line(line)
    sections: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for i, r in rows.items():
        sections[i.split("-")[0]][r["status"]] += 1
    tr.write_line("")
    tr.write_line("per section: " + "; ".join(
        f"{s}: " + ", ".join(f"{n} {k}" for k, n in sorted(c.items())) for s, c in sorted(sections.items())
    ))
    tests = config._conformance_tests
    undecided = {n: t for n, t in tests.items() if t["outcome"] == INCONCLUSIVE}
    if undecided:
        tr.write_line("")
        tr.write_line(f"inconclusive ({len(undecided)}): the suite could not decide; these say nothing against "
                      "the implementation", yellow=True, bold=True)
        for nodeid, t in undecided.items():
            tr.write_line(f"  {nodeid}: {t['reason'][:400]}")
    violated = [i for i, r in rows.items() if r["status"] == VIOLATED]
    inconclusive = [i for i, r in rows.items() if r["status"] == INCONCLUSIVE]
    counts: dict[str, int] = defaultdict(int)
    for t in tests.values():
        counts[t["outcome"]] += 1
    tr.write_line("")
    tr.write_line("tests: " + ", ".join(f"{counts[k]} {k}" for k in (PASSED, VIOLATED, XFAIL, XPASS, INCONCLUSIVE,
                                                                      CHECKED_NOTHING, NOT_IMPLEMENTED, SKIPPED)
                                          if counts[k]))
    known = [i for i, r in rows.items() if r["status"] == XFAIL]
    if known:
        tr.write_line(f"known gaps, violated as listed (--xfails-file): {', '.join(known)}", yellow=True)
    xpassed = [n for n, t in tests.items() if t["outcome"] == XPASS]
    if xpassed:
        tr.write_line(f"listed as known gaps, yet passed ({len(xpassed)}): {', '.join(xpassed)}: take them off the "
                      "list", yellow=True)
    texts = reporting.statements(SPEC_DIR)
    if violated:
        tr.write_line(f"requirements violated: {', '.join(violated)}", red=True, bold=True)  # one line, parsed by tools
        for line in reporting.explained(violated, texts):
            tr.write_line(line, red=True)
    else:
        tr.write_line("requirements violated: none", green=True)
    if inconclusive:
        tr.write_line(f"requirements inconclusive: {', '.join(inconclusive)} (no test decided them; exit status "
                      f"{INCONCLUSIVE_EXIT}; re-run, or add --conformance-timescale={tm.RECHECK:g} on a busy machine)",
                      yellow=True)
        for line in reporting.explained(inconclusive, texts):
            tr.write_line(line, yellow=True)
    if violated or inconclusive:
        tr.write_line(f"the spec these anchors point into: {SPEC_DIR} (on the docs site: spec/)")
    clauses = _clauses(config, tr)
    path = config.getoption("--conformance-json")
    if path:
        with open(path, "w") as f:
            json.dump(_json(config, exitstatus, rows, texts, caps, clauses), f, indent=2)
        tr.write_line(f"requirement table written to {os.path.abspath(path)}")


def _json(config, exitstatus, rows: dict, texts: dict, caps: list[str], clauses: dict) -> dict:
    """The JSON report (docs/conformance.md, "The JSON report"; its layout is reporting.SCHEMA)."""
    tests = config._conformance_tests
    role = role_of(config)
    replay = getattr(config, "_conformance_replay", None)
    return {
        "schema": reporting.SCHEMA,
        "interrupted": exitstatus == pytest.ExitCode.INTERRUPTED,
        "spec_version": SPEC_VERSION,
        "suite": {"version": _suite_version(),
                  "digest": reporting.suite_digest(Path(__file__).resolve().parent, SPEC_DIR)},
        "impl": None if program_of(config) else config.getoption("--impl"),
        "receiver_cmd": config.getoption("--receiver-cmd"),
        "sender_cmd": config.getoption("--sender-cmd"),
        "capabilities": caps,
        "roles": [role] if role else list(ROLES),
        "protocol_version": config.getoption("--protocol-version"),
        "xfails_file": config.getoption("--xfails-file"),
        "profile": config.getoption("--conformance-profile"),
        "timescale": tm.SCALE,
        "hypothesis_seed": config.getoption("hypothesis_seed"),
        "replayed_from": str(replay.folder) if replay else None,
        "measure": config._conformance_measure,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "outcomes": [PASSED, VIOLATED, INCONCLUSIVE, NOT_IMPLEMENTED, CHECKED_NOTHING, XFAIL, XPASS],
        "requirements": reporting.annotate(rows, texts),
        "tests": {n: {**t, **_timing(config, n)} for n, t in tests.items()},
        "violated": [i for i, r in rows.items() if r["status"] == VIOLATED],
        "inconclusive": [i for i, r in rows.items() if r["status"] == INCONCLUSIVE],
        "xfail": [i for i, r in rows.items() if r["status"] == XFAIL],
        "xpass": [n for n, t in tests.items() if t["outcome"] == XPASS],
        "clauses": clauses,
    }


def _suite_version() -> str | None:
    """The version of the package the suite came with (the installed suite is part of weightsync)."""
    from importlib import metadata

    try:
        return metadata.version("weightsync")
    except metadata.PackageNotFoundError:
        return None


def _timing(config, nodeid: str) -> dict:
    """A test's `seconds` (setup, call and teardown) and the `process` that ran it, for the JSON report."""
    seconds, process = config._conformance_timing.get(nodeid, (0.0, "main"))
    return {"seconds": round(seconds, 3), "process": process}


def _table(config) -> dict[str, dict]:
    """The requirement table of this run (report.table), one-role subjects' unrun requirements included."""
    role = role_of(config)
    note = None
    if role:
        what = f"a {role} program" if program_of(config) else f"a {role}-only module (API-12)"
        note = f"(needs both roles of the binding: not run for {what})"
    return reporting.table(config._conformance_tests, reporting.spec_ids(SPEC_DIR), note)


def _clauses(config, tr) -> dict[str, dict]:
    """Which clauses of the inventory this run exercised: one line, and with --conformance-clauses each one it did
    not. It measures the suite (which conditions its tests made true), never the implementation."""
    clauses = inventory.load()
    if not clauses:
        return {}
    result = inventory.exercised(clauses, config._conformance_tests, config._conformance_seen)
    missed = inventory.never(result)
    tr.write_line(f"clauses exercised: {len(result) - len(missed)} of {len(result)} (spec/clauses/; a measure of "
                  f"the suite{'' if config.getoption('--conformance-clauses') else ', --conformance-clauses lists the rest'})")
    if config.getoption("--conformance-clauses"):
        for cid in missed:
            tr.write_line(inventory.never_line(cid, result[cid]))
    return result
