"""A pytest plugin for the mutant runs: the tests a mutant names in KILLED_BY run first.

    python -m pytest conformance --impl=tests.mutants.NAME -x -p tests.mutants._first \
        --run-first=conformance/test_x.py::test_y

Only the order changes: every test of the suite is still collected and, unless one
fails first (`-x`), run. So a mutant that its named test kills stops after that test,
and one that it does not kill meets the rest of the suite, as without this plugin.
A name that matches no collected test is a usage error, so a stale hint is seen at once.

One exception: a named test that ends *inconclusive* (the machine was too busy to judge it, even at the
re-check) stops the run (pytest's "Interrupted" exit status, 2) with STOPPED_INCONCLUSIVE in its output. The
rest of the suite would otherwise run serially in the killer's place and outlast the mutant's time limit, which
reads as a hang; the caller runs it again instead (tests/test_conformance_mutants.py, `kill`).
"""

from __future__ import annotations

import pytest

from conformance.verdict import INCONCLUSIVE

#: Printed when a named test was inconclusive and the run stopped there.
STOPPED_INCONCLUSIVE = "run-first test inconclusive: the run stops here"


def pytest_addoption(parser):
    parser.addoption("--run-first", action="append", default=[], metavar="NODEID",
                     help="run this test (a node id, or its name without parameters) before the others")


def _matches(nodeid: str, wanted: str) -> bool:
    return nodeid == wanted or nodeid.startswith(wanted + "[")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    first = config.getoption("--run-first")
    if not first:
        return
    for wanted in first:
        if not any(_matches(item.nodeid, wanted) for item in items):
            raise pytest.UsageError(f"--run-first={wanted}: no such test in this run")

    def rank(item) -> int:
        return next((k for k, wanted in enumerate(first) if _matches(item.nodeid, wanted)), len(first))

    items.sort(key=rank)  # stable: the rest keep the suite's order


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outside the suite's own wrapper, which gives the verdict
def pytest_runtest_makereport(item, call):
    rep = yield
    c = getattr(rep, "conformance", None)
    if c and c.get("outcome") == INCONCLUSIVE and any(
            _matches(item.nodeid, wanted) for wanted in item.config.getoption("--run-first")):
        item.session.shouldstop = f"{STOPPED_INCONCLUSIVE} ({item.nodeid})"
    return rep


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_cmdline_main(config):
    """A mutant run stops at its first failure: one process, its killing test first, no xdist start-up."""
    if getattr(config.option, "numprocesses", "absent") is None:
        config.option.numprocesses = 0
    return (yield)
