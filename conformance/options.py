"""The suite's command-line options, their checks, and the run's timescale.

Every option the suite adds is declared here, and checked here once at configure, so a wrong value is a usage
error before any test runs. The timescale is set here too: it is what the options and the machine's measure
make of every bound (timing.py), and xdist's workers and the receiver processes inherit it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from . import backstop
from . import report as reporting
from . import timing as tm
from .names import SPEC_DIR, STATE_MACHINE_RULES, TIMESCALE_ENV

ID_RE = re.compile(r"^[A-Z]+(?:-[A-Z])?-\d+$")
#: Processes the suite spreads over when pytest-xdist is installed and -n is not given. Its time is mostly waits
#: (WIRE-7's ten seconds, leases), so more processes than cores: on 2 cores, 6 took 50-52 s, 4 took 59-67 s, 3 took
#: 75-77 s, 8 took 55 s.
DEFAULT_PROCESSES = 6
#: The environment variable that carries the calibration to xdist's worker processes.
MEASURE_ENV = "WEIGHTSYNC_CONFORMANCE_MEASURE"
#: Where --conformance-replay keeps failing examples when it names no folder.
REPLAY_DIR = ".hypothesis/conformance"


def pytest_addoption(parser):
    group = parser.getgroup("conformance", "weightsync conformance suite")
    group.addoption("--impl", default="weightsync", help="module exposing the weightsync binding (default: weightsync)")
    group.addoption(
        "--conformance-profile",
        default="default",
        choices=("default", "thorough", "ci"),
        help="default: about a minute; thorough: many more Hypothesis examples, for release checks; "
        "ci: as default without shrinking failures (pass/fail only)",
    )
    group.addoption(
        "--conformance-timescale",
        default=None,
        type=float,
        metavar="FACTOR",
        help="multiply every timeout and bound of the suite by FACTOR, on top of what the suite measures of the "
        "machine at start (default 1, or $" + TIMESCALE_ENV + ")",
    )
    group.addoption("--conformance-budget", default=None, type=float, metavar="SECONDS",
                    help=f"a test's wall time at timescale 1 before the suite calls it hung (default "
                         f"{tm.TEST_BUDGET:g}; a test that needs more asks for it; the re-check's room is added)")
    group.addoption("--conformance-json", default=None, metavar="PATH", help="write the requirement table as JSON")
    group.addoption("--conformance-clauses", action="store_true", default=False,
                    help="list each clause of the inventory (spec/clauses/) this run did not exercise: a measure of "
                         "the suite, not of the implementation")
    group.addoption(
        "--receiver-cmd",
        default=None,
        metavar="COMMAND",
        help="test an outside receiver program instead of the binding's Receiver: COMMAND with {url} in it, "
        "following the test-control contract of docs/conformance.md; only the receiver tests run",
    )
    group.addoption(
        "--xfails-file",
        default=None,
        metavar="PATH",
        help="known gaps, one per line: a test (node id or name) or a requirement ID; they run, and a violation "
        "of them is reported xfail (not failing the run), a listed test that passes xpass",
    )
    group.addoption(
        "--protocol-version",
        default="1.1",
        choices=("1.0", "1.1"),
        help="the protocol version the implementation speaks; tests of requirements added later are reported not "
        "implemented (spec/README.md lists what 1.1 added)",
    )
    group.addoption(
        "--conformance-examples",
        default=None,
        type=int,
        metavar="N",
        help="Hypothesis examples per test instead of the profile's (the soak, conformance/tools/soak.py)",
    )
    group.addoption(
        "--conformance-replay",
        nargs="?",
        const=REPLAY_DIR,
        default=None,
        metavar="DIR",
        help="keep failing Hypothesis examples in DIR (default " + REPLAY_DIR + "), in a folder of their own per "
        "implementation, and replay them first in later runs; without it every run draws afresh from its seed",
    )
    group.addoption(
        "--sender-cmd",
        default=None,
        metavar="COMMAND",
        help="test an outside sender program: COMMAND with {layout} and {receivers} in it, following the sender "
        "test-control contract of docs/conformance.md; the suite's scripted receivers join it; only the sender "
        "tests run",
    )


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config):
    """Spread the run over DEFAULT_PROCESSES processes unless -n says otherwise (or xdist is absent)."""
    opt = config.option
    if (getattr(opt, "numprocesses", "absent") is None and not hasattr(config, "workerinput")
            and not getattr(opt, "usepdb", False) and not getattr(opt, "collectonly", False)):
        opt.numprocesses = DEFAULT_PROCESSES
        opt.maxschedchunk = 1  # long tests first (see `waits`), one at a time
    return (yield)


def configure(config) -> None:
    """The markers, the options' checks, the known gaps, and the timescale (called first by conftest)."""
    config.addinivalue_line("markers", "req(*ids): the spec requirement IDs a test checks")
    config.addinivalue_line("markers", "needs(*capabilities): optional parts (CAPABILITIES) the test needs")
    config.addinivalue_line("markers", "waits(seconds): the test waits out a bound about this long; started first")
    user = config.getoption("--conformance-timescale")
    if user is not None and not user > 0:
        raise pytest.UsageError(f"--conformance-timescale must be positive, got {user}")
    asked = config.getoption("--conformance-budget")
    if asked is not None:
        if not asked > 0:
            raise pytest.UsageError(f"--conformance-budget must be positive, got {asked}")
        tm.set_budget(asked)
    program = config.getoption("--receiver-cmd") or config.getoption("--sender-cmd")
    if config.getoption("--receiver-cmd") and config.getoption("--sender-cmd"):
        raise pytest.UsageError("--receiver-cmd and --sender-cmd test one program each: give one of them per run")
    if program and config.getoption("--protocol-version") == "1.0":
        raise pytest.UsageError("a program is tested over the wire profile, which 1.1 added: "
                                "--protocol-version 1.0 tests a binding only")
    xfails = config.getoption("--xfails-file")
    config._conformance_xfails = _read_xfails(xfails) if xfails else (frozenset(), frozenset())
    #: The requirements protocol 1.1 added, when the implementation speaks 1.0: not judged (spec/README.md).
    config._conformance_later = added_in_1_1() if config.getoption("--protocol-version") == "1.0" else frozenset()
    if not hasattr(config, "workerinput"):
        backstop.prepare()
        # The controlling process measures the machine once; xdist's workers and every
        # spawned receiver process inherit the result through the environment.
        measure = tm.calibrate()
        base = user if user is not None else float(os.environ.get(TIMESCALE_ENV, "1") or 1)
        os.environ[TIMESCALE_ENV] = repr(round(base * tm.scale_for(measure), 2))
        os.environ[MEASURE_ENV] = json.dumps({**measure, "timescale_given": base})
    tm.set_scale(float(os.environ[TIMESCALE_ENV]))
    config._conformance_measure = json.loads(os.environ.get(MEASURE_ENV, "{}"))


def _read_xfails(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """(tests, requirement IDs) listed in an --xfails-file: one per line, `#` starts a comment."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise pytest.UsageError(f"--xfails-file={path}: cannot read it ({e})") from None
    entries = [line.partition("#")[0].strip() for line in text.splitlines()]
    entries = [e for e in entries if e]
    ids = frozenset(e for e in entries if ID_RE.match(e))
    unknown = sorted(ids - set(reporting.spec_ids(SPEC_DIR)))
    if unknown:
        raise pytest.UsageError(f"--xfails-file={path} lists requirements the spec does not define: {unknown}")
    rules = sorted({e.partition(".")[2] for e in entries if e.startswith("Protocol.")} - set(STATE_MACHINE_RULES))
    if rules:
        raise pytest.UsageError(f"--xfails-file={path} names state-machine rules that do not exist: {rules}; "
                                f"the rules one may switch off: {sorted(STATE_MACHINE_RULES)}")
    return frozenset(e for e in entries if e not in ids), ids


def added_in_1_1() -> frozenset[str]:
    """The requirements 1.1 added, from the one list of them (spec/README.md, "Added in 1.1: ...")."""
    m = re.search(r"^Added in 1\.1: (.*)$", (SPEC_DIR / "README.md").read_text(), re.M)
    assert m, "spec/README.md lost its 'Added in 1.1:' line"
    return frozenset(re.findall(r"`([A-Z]+(?:-[A-Z])?-\d+)`", m.group(1)))
