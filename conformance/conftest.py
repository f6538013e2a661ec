"""The suite's wiring: its plugins, one per job, in the order they configure, and the fixtures its tests share.

    pytest conformance [--impl=MODULE] [--conformance-profile=default|thorough|ci]
                       [--conformance-timescale=FACTOR] [--conformance-json=PATH]
                       [--receiver-cmd="PROGRAM {url}" | --sender-cmd="PROGRAM {layout} {receivers}"]
                       [--xfails-file=PATH] [--protocol-version=1.0|1.1] [-n N]

The module named by --impl (default: weightsync) must expose the spec's Python binding (API-1..API-5); with
--receiver-cmd or --sender-cmd the subject is a program. Each test ends in one of four outcomes (verdict.py):
passed, violated, inconclusive, not implemented. Only a violation fails the run (exit status 1); a run with
inconclusive tests and no violation exits with outcomes.INCONCLUSIVE_EXIT.

The jobs: options.py (options, their checks, the timescale), subject.py (the module or program under test),
seeds.py (Hypothesis), selection.py (collection), recheck.py (failures only about time), outcomes.py (verdicts),
stops.py (runs that end early), summary.py (the terminal summary and the JSON report).
"""
# ruff: noqa: E402 - the plugins are registered for assertion rewriting before they are imported

from __future__ import annotations

import os
import sys

import pytest

pytest_plugins = [f"{__package__}.{job}" for job in
                  ("options", "subject", "seeds", "selection", "recheck", "outcomes", "stops", "summary")]
# Imported below before pytest loads them as plugins: registered first, their asserts are rewritten as the
# conftest's own are. One a test module of the repository's own tests imported earlier is left as it is
# (pytest would only warn that it cannot rewrite it).
pytest.register_assert_rewrite(*(name for name in pytest_plugins if name not in sys.modules))

from . import backstop, options, outcomes, seeds, stops, subject
from .names import KNOWN_CAPABILITIES  # noqa: F401 - test_binding imports it from here
from .options import added_in_1_1 as _added_in_1_1  # noqa: F401 - test_traceability imports it from here
from .recheck import on_cleanup
from .seeds import replay_note, reproduce_command  # noqa: F401 - test_state_machine imports them from here
from .selection import not_checked  # noqa: F401 - test_state_machine imports it from here
from .subject import impl, sender_command  # noqa: F401 - the wire tests import them from here
from .subject import program_of as _program  # noqa: F401 - test_receiver_wire imports it from here

POOL_SIZE = 3
#: How the suite starts its receiver processes: forkserver (default: torch imported once) or spawn.
START_ENV = "WEIGHTSYNC_CONFORMANCE_START"


@pytest.hookimpl(tryfirst=True)  # before Hypothesis's own plugin reads --hypothesis-seed
def pytest_configure(config):
    options.configure(config)
    subject.configure(config)
    outcomes.configure(config)
    stops.configure(config)
    seeds.configure(config)


def pytest_collection_finish(session):
    """The suite's imports are done and no test has run: the leak checks' collections skip those objects."""
    from .probes import freeze_imports

    freeze_imports()


@pytest.fixture(scope="session")
def ws(request):
    """The implementation under test (the --impl module)."""
    return impl(request.config)


@pytest.fixture(scope="session")
def pool(request):
    """Receiver processes for the whole session, reused by every test (pool.Pool)."""
    from .pool import Pool

    p = Pool(request.config.getoption("--impl"), POOL_SIZE, os.environ.get(START_ENV) or "forkserver")
    backstop.register(p)
    yield p
    p.close()


@pytest.fixture
def closing(request):
    """Register a scripted peer (or anything with close()); each is closed at teardown."""
    made = []

    def close_all():
        while made:
            made.pop().close()

    on_cleanup(request, close_all)
    yield made.append
    close_all()


@pytest.fixture
def rigs(ws, pool, request):
    """Make a Rig (sender + connected workers + model); every rig is closed at teardown."""
    from .rig import Rig

    made = []

    def make(*args, **kwargs):
        r = Rig(ws, pool, *args, **kwargs)
        made.append(r)
        return r

    def teardown_all():
        while made:
            made.pop(0).teardown()

    on_cleanup(request, teardown_all)
    yield make
    teardown_all()
