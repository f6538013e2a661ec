"""Runs that end early still end with a report: a hung test (the backstop), a lost process, SIGTERM, and no run
ends because a thread raised.

An implementation can hang where pytest-timeout cannot reach it, crash the process that runs a test, or the run
can be stopped from outside (a CI job's time limit). In each case the tests that ran keep their verdicts and
the report, the JSON included, is written (conformance/backstop.py does the watching).
"""

from __future__ import annotations

import signal
import threading
import traceback

import pytest

from . import backstop, summary
from .outcomes import INCONCLUSIVE_EXIT
from .selection import IDS, budget
from .subject import impl
from .verdict import INCONCLUSIVE, VIOLATED, implementation_packages

#: The session, for the SIGTERM handler (the controlling process only).
_SESSION: list = []


def configure(config) -> None:
    """SIGTERM (a CI job's time limit, `timeout`, a scheduler) ends the run as Ctrl-C does: the report of what ran,
    the JSON included, is written before the process exits."""
    if not hasattr(config, "workerinput") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):
        _SESSION[:] = [session]


def _terminated(signum, frame):
    """SIGTERM: the run stops now, as Ctrl-C stops it. The interrupt raised here can land inside C code that turns
    it into another error (CPython's ast module makes a SystemError of it), so the session is also told to stop
    after the test it is in: either way the run ends interrupted, its report written."""
    why = "SIGTERM: the run was stopped; its report covers the tests that ran"
    for session in _SESSION:
        session.shouldstop = why
    raise KeyboardInterrupt(why)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Every test under the backstop's watch (conformance/backstop.py): a hang pytest-timeout cannot end."""
    ws = impl(item.config)
    packages = implementation_packages(ws) if ws is not None else frozenset()
    finish = None if hasattr(item.config, "workerinput") else (lambda record: _finish_hung(item, record))
    timer = backstop.watch(item.nodeid, item.stash.get(IDS, []), budget(item), packages, finish)
    try:
        return (yield)
    finally:
        timer.cancel()


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        backstop.clean()


#: What threads ended by (thread_ended), told once the run is over; at most ENDED_KEPT of them.
ENDED: list[str] = []
ENDED_KEPT = 50


@pytest.hookimpl(trylast=True)  # after pytest's own hook is in place: this one stands in front of it
def pytest_configure(config):
    """A thread's uncaught exception (the suite's helper threads, the implementation's own) is kept as one line,
    without its traceback, and told after the run. On CPython 3.11 a traceback is formatted with `ast.parse`,
    whose recursion count is shared by every thread: a thread formatting one while pytest parses a failing test's
    source can stop the run with an internal error (SystemError: AST constructor recursion depth mismatch), as a
    fresh-clone CI run did. Nothing is written while tests run: a test that reads the process's output (API-6)
    must not find a line of the suite's own threads there."""
    before = threading.excepthook
    threading.excepthook = thread_ended
    config.add_cleanup(lambda: setattr(threading, "excepthook", before))
    # A thread may also format a traceback without raising: an implementation's thread that logs an exception
    # (`log.exception`) does, and a fifteenth-round bug's did, with the same internal error. The carets under a
    # traceback's lines are what parse the source: without them no thread's traceback calls `ast.parse`.
    for owner, name, stand_in in CARETS:
        real = owner.__dict__.get(name)
        if real is not None:
            setattr(owner, name, stand_in)
            config.add_cleanup(lambda owner=owner, name=name, real=real: setattr(owner, name, real))


def _no_anchors(segment):
    return None


def _no_carets(self, *args, **kwargs):
    return False


#: Where `traceback` parses a line's source for its carets, and what stands in for each in the suite: the anchors
#: (CPython 3.11 and later) and, from 3.13, the test of whether to show carets at all.
CARETS = ((traceback, "_extract_caret_anchors_from_line_segment", _no_anchors),
          (traceback.StackSummary, "_should_show_carets", _no_carets))


def thread_ended(args) -> None:
    """threading.excepthook: one line naming the thread and its exception, kept; nothing formats a traceback."""
    if args.exc_type is SystemExit or len(ENDED) >= ENDED_KEPT:
        return
    name = "<unknown>" if args.thread is None else args.thread.name
    try:
        text = str(args.exc_value)
    except Exception:  # noqa: BLE001 - an implementation's exception whose str() fails is still told
        text = "<str() failed>"
    ENDED.append(f"thread {name} ended by {args.exc_type.__name__}: {text[:300]}")


def pytest_terminal_summary(terminalreporter):
    if ENDED:
        terminalreporter.section("threads that ended by an exception (not a verdict)")
        for line in ENDED:
            terminalreporter.write_line(line)


def _finish_hung(item, record: dict) -> int:
    """Without xdist, a test the backstop gave up on: its verdict reported, then the run's report (the JSON too)."""
    rep = pytest.TestReport(nodeid=item.nodeid, location=item.location, keywords={}, outcome="failed",
                            longrepr=f"{record['reason']}\nwhere it was:\n{record['details']}", when="call")
    rep.conformance_ids, rep.conformance = record["ids"], {k: record[k] for k in ("outcome", "blamed", "reason",
                                                                                   "details")}
    config = item.config
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.suspend_global_capture(in_=False)  # the test's capture holds the terminal's descriptor
    config.hook.pytest_runtest_logreport(report=rep)
    tr = config.pluginmanager.getplugin("terminalreporter")
    if tr is not None:
        tr.section(f"{item.nodeid}: ended by the suite's backstop", red=True)
        tr.write_line(f"{record['reason']}\nwhere it was:\n{record['details']}")
        summary.write(tr, pytest.ExitCode.INTERRUPTED, config)
    backstop.clean()
    return 1 if record["outcome"] == VIOLATED else INCONCLUSIVE_EXIT


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem, report, sched):
    """pytest-xdist lost the process running `crashitem`: the backstop's verdict, or inconclusive."""
    record = backstop.found(crashitem) or {
        "outcome": INCONCLUSIVE, "blamed": [], "ids": [], "details": "",
        "reason": "the process running this test ended without a verdict (a crash of the implementation in the "
                  "suite's own process, or the process was killed); the run went on in a new one"}
    report.conformance_ids = record["ids"]
    report.conformance = {k: record[k] for k in ("outcome", "blamed", "reason", "details")}
    if record["outcome"] != VIOLATED:
        report.outcome = "skipped"
        report.longrepr = (crashitem.split("::")[0], 0, f"inconclusive: {record['reason']}")
    else:
        report.longrepr = f"{record['reason']}\nwhere it was:\n{record['details']}"
