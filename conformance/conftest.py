"""Options, implementation selection, capability skips, the re-check of timing failures, and the report.

    pytest conformance [--impl=MODULE] [--conformance-profile=default|thorough|ci]
                       [--conformance-timescale=FACTOR] [--conformance-json=PATH]
                       [--receiver-cmd="PROGRAM {url}" | --sender-cmd="PROGRAM {layout} {receivers}"]
                       [--xfails-file=PATH] [--protocol-version=1.0|1.1] [-n N]

The module named by --impl (default: weightsync) must expose the spec's Python
binding (API-1..API-5). Nothing else of it is used. With --receiver-cmd or
--sender-cmd the subject is a program and neither torch nor any implementation is
imported here.

Each test ends in one of four outcomes (verdict.py): passed, violated, inconclusive,
not implemented. Only a violation fails the run (exit status 1); a run with
inconclusive tests and no violation exits with INCONCLUSIVE_EXIT. The run is spread
over two processes by default (pytest-xdist), so reports are gathered from
`pytest_runtest_logreport`, which the controlling process sees for every test.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import random
import re
import shlex
import signal
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from . import backstop
from . import clauses as inventory
from . import report as reporting
from . import timing as tm
from .names import (
    KNOWN_CAPABILITIES,
    NOT_DECLARED,
    ROLES,
    SPEC_DIR,
    STATE_MACHINE_RULES,
    TIMESCALE_ENV,
    required_names,
    roles,
)
from .report import RANK
from .verdict import (
    CHECKED_NOTHING,
    INCONCLUSIVE,
    NOT_IMPLEMENTED,
    PASSED,
    SKIPPED,
    VIOLATED,
    XFAIL,
    XPASS,
    Inconclusive,
    implementation_packages,
    judge,
    missed_again,
)

ID_RE = re.compile(r"^[A-Z]+(?:-[A-Z])?-\d+$")
POOL_SIZE = 3
#: The exit status of a run with no violation and at least one inconclusive test.
INCONCLUSIVE_EXIT = 6
#: Processes the suite spreads over when pytest-xdist is installed and -n is not given.
DEFAULT_PROCESSES = 3
#: The environment variable that carries the calibration to xdist's worker processes.
MEASURE_ENV = "WEIGHTSYNC_CONFORMANCE_MEASURE"
#: Set by `python -m weightsync.conformance`: the command a report gives to run one test again.
RUNNER_ENV = "WEIGHTSYNC_CONFORMANCE_RUNNER"
#: The protocol version of the spec this suite checks (its title, spec/README.md).
SPEC_VERSION = reporting.spec_version(SPEC_DIR)
#: Program mode runs these modules only (by the role of the program); the others need the binding.
PROGRAM_MODULES = {"receiver": ("test_receiver_wire",), "sender": ("test_sender_wire",)}
#: How the suite starts its receiver processes: spawn (default) or forkserver (the soak: torch imported once).
START_ENV = "WEIGHTSYNC_CONFORMANCE_START"
#: Where --conformance-replay keeps failing examples when it names no folder.
REPLAY_DIR = ".hypothesis/conformance"

_common = dict(
    # No example database unless --conformance-replay: a verdict depends on the implementation and the run's seed,
    # never on examples an earlier run (perhaps of another implementation) left in the working directory.
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
settings.register_profile("conformance-default", max_examples=15, stateful_step_count=20, **_common)
#: For runs whose only question is pass or fail (the mutant tests): no shrinking.
settings.register_profile(
    "conformance-ci", max_examples=15, stateful_step_count=20,
    phases=[Phase.explicit, Phase.reuse, Phase.generate], **_common,
)
settings.register_profile("conformance-thorough", max_examples=150, stateful_step_count=40, **_common)


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


def _read_xfails(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """(tests, requirement IDs) listed in an --xfails-file: one per line, `#` starts a comment."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise pytest.UsageError(f"--xfails-file={path}: cannot read it ({e})") from None
    entries = [line.partition("#")[0].strip() for line in text.splitlines()]
    entries = [e for e in entries if e]
    ids = frozenset(e for e in entries if ID_RE.match(e))
    unknown = sorted(ids - set(spec_ids()))
    if unknown:
        raise pytest.UsageError(f"--xfails-file={path} lists requirements the spec does not define: {unknown}")
    rules = sorted({e.partition(".")[2] for e in entries if e.startswith("Protocol.")} - set(STATE_MACHINE_RULES))
    if rules:
        raise pytest.UsageError(f"--xfails-file={path} names state-machine rules that do not exist: {rules}; "
                                f"the rules one may switch off: {sorted(STATE_MACHINE_RULES)}")
    return frozenset(e for e in entries if e not in ids), ids


def _added_in_1_1() -> frozenset[str]:
    """The requirements 1.1 added, from the one list of them (spec/README.md, "Added in 1.1: ...")."""
    m = re.search(r"^Added in 1\.1: (.*)$", (SPEC_DIR / "README.md").read_text(), re.M)
    assert m, "spec/README.md lost its 'Added in 1.1:' line"
    return frozenset(re.findall(r"`([A-Z]+(?:-[A-Z])?-\d+)`", m.group(1)))


def _suite_version() -> str | None:
    """The version of the package the suite came with (the installed suite is part of weightsync)."""
    from importlib import metadata

    try:
        return metadata.version("weightsync")
    except metadata.PackageNotFoundError:
        return None


def _program(config) -> str | None:
    """The command of the program under test, in program mode (either role)."""
    return config.getoption("--receiver-cmd") or config.getoption("--sender-cmd")


def _role(config) -> str | None:
    """The one role under test, "receiver" or "sender" (a program, or a one-role module, API-12); None for both."""
    if config.getoption("--receiver-cmd"):
        return "receiver"
    if config.getoption("--sender-cmd"):
        return "sender"
    ws = getattr(config, "_conformance_impl", None)
    mine = roles(ws.CAPABILITIES) if ws is not None else frozenset(ROLES)
    return next(iter(mine)) if len(mine) == 1 else None


def sender_command(config) -> str:
    """The sender program of test_sender_wire: --sender-cmd, or for a sender-only module (API-12) the binding's
    sender program (conformance/senders/reference_sender.py) over that module."""
    given = config.getoption("--sender-cmd")
    if given:
        return given
    program = Path(__file__).resolve().parent / "senders" / "reference_sender.py"
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(program))} {{layout}} {{receivers}} " + \
        shlex.quote(config.getoption("--impl"))


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config):
    """Spread the run over DEFAULT_PROCESSES processes unless -n says otherwise (or xdist is absent)."""
    opt = config.option
    if (getattr(opt, "numprocesses", "absent") is None and not hasattr(config, "workerinput")
            and not getattr(opt, "usepdb", False) and not getattr(opt, "collectonly", False)):
        opt.numprocesses = DEFAULT_PROCESSES
        opt.maxschedchunk = 1  # long tests first (see `waits`), one at a time
    return (yield)


def _load_impl(name: str):
    try:
        mod = importlib.import_module(name)
    except Exception as e:  # noqa: BLE001 - any import failure is a usage error here
        raise pytest.UsageError(f"--impl={name}: cannot import it ({type(e).__name__}: {e})") from None
    caps = getattr(mod, "CAPABILITIES", frozenset())
    missing = [n for n in required_names(caps if isinstance(caps, frozenset) else ()) if not hasattr(mod, n)]
    if missing:
        raise pytest.UsageError(
            f"--impl={name} does not expose the weightsync binding: missing {', '.join(missing)} (API-1..API-5; "
            "a module of one role names it, 'sender' or 'receiver', in CAPABILITIES, API-12). "
            "Write a shim module that re-exports these names (docs/conformance.md)."
        )
    if not isinstance(caps, frozenset) or not all(isinstance(c, str) for c in caps):
        raise pytest.UsageError(f"--impl={name}: CAPABILITIES must be a frozenset of str, got {caps!r} (API-5)")
    unknown = sorted(caps - KNOWN_CAPABILITIES)
    if unknown:
        raise pytest.UsageError(
            f"--impl={name}: CAPABILITIES names unknown parts {unknown}; known: {sorted(KNOWN_CAPABILITIES)} (API-5)"
        )
    return mod


@pytest.hookimpl(tryfirst=True)  # before Hypothesis's own plugin reads --hypothesis-seed
def pytest_configure(config):
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
        tm.TEST_BUDGET = asked
    if config.getoption("--receiver-cmd") and config.getoption("--sender-cmd"):
        raise pytest.UsageError("--receiver-cmd and --sender-cmd test one program each: give one of them per run")
    if _program(config) and config.getoption("--protocol-version") == "1.0":
        raise pytest.UsageError("a program is tested over the wire profile, which 1.1 added: "
                                "--protocol-version 1.0 tests a binding only")
    xfails = config.getoption("--xfails-file")
    config._conformance_xfails = _read_xfails(xfails) if xfails else (frozenset(), frozenset())
    #: The requirements protocol 1.1 added, when the implementation speaks 1.0: not judged (spec/README.md).
    config._conformance_later = _added_in_1_1() if config.getoption("--protocol-version") == "1.0" else frozenset()
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
    config._conformance_impl = None if _program(config) else _load_impl(config.getoption("--impl"))
    _check_modules_fit_role(config)
    from .preflight import preflight  # a program that cannot start: a usage error, before any test
    preflight(config)
    config.pluginmanager.register(Outcomes(config), "weightsync-conformance-outcomes")
    if not hasattr(config, "workerinput") and threading.current_thread() is threading.main_thread():
        # SIGTERM (a CI job's time limit, `timeout`, a scheduler) ends the run as Ctrl-C does: the report of
        # what ran, the JSON included, is written before the process exits.
        signal.signal(signal.SIGTERM, _terminated)
    if not config.getoption("--hypothesis-profile", default=None):
        settings.load_profile(f"conformance-{config.getoption('--conformance-profile')}")
    _bound_shrinking()
    if not hasattr(config, "workerinput") and config.getoption("hypothesis_seed", default=None) is None:
        # Every run has a seed, printed in its header, so that any failure it finds can be run again
        # (xdist's workers get the same option).
        config.option.hypothesis_seed = str(random.SystemRandom().randrange(2**31))
    examples = config.getoption("--conformance-examples")
    if examples is not None:
        if examples < 1:
            raise pytest.UsageError(f"--conformance-examples must be at least 1, got {examples}")
        settings.register_profile("conformance-examples", parent=settings.default, max_examples=examples)
        settings.load_profile("conformance-examples")
    replay = config.getoption("--conformance-replay")
    if replay:
        db = ReplayDatabase(Path(replay) / _subject_key(config))
        settings.register_profile("conformance-replay", parent=settings.default, database=db)
        settings.load_profile("conformance-replay")
        config._conformance_replay = db


#: Seconds Hypothesis may spend shrinking one failure, at timescale 1 (its own default is 300 s): against an
#: implementation that fails, a stranger's run should end in minutes; a shorter example is worth less than that.
SHRINK_SECONDS = 45.0


def _bound_shrinking() -> None:
    """Cap Hypothesis's shrinking time (an engine constant; where a Hypothesis release lacks it, nothing)."""
    from hypothesis.internal.conjecture import engine

    if hasattr(engine, "MAX_SHRINKING_SECONDS"):
        engine.MAX_SHRINKING_SECONDS = min(engine.MAX_SHRINKING_SECONDS, SHRINK_SECONDS * tm.SCALE)


#: The session, for the SIGTERM handler (the controlling process only).
_SESSION: list = []


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


class ReplayDatabase(DirectoryBasedExampleDatabase):
    """Hypothesis's directory database, counting the saved examples it hands back (each replay is announced)."""

    def __init__(self, path: Path):
        super().__init__(str(path))
        self.folder = path
        self.replayed = 0

    def fetch(self, key: bytes):
        for value in super().fetch(key):
            self.replayed += 1
            yield value

    def saved(self) -> int:
        return sum(len(files) for _, _, files in os.walk(self.folder)) if self.folder.is_dir() else 0


def _subject_key(config) -> str:
    """The folder of saved examples of one subject: the --impl module, or a digest of the program's command."""
    program = _program(config)
    if program:
        return "program-" + hashlib.sha256(program.encode()).hexdigest()[:16]
    return "impl-" + re.sub(r"[^A-Za-z0-9_.-]", "_", config.getoption("--impl"))


def not_checked(item, ids) -> None:
    """These requirements were not checked by this test after all (a rule switched off): not reported for it."""
    item.stash[_IDS] = [i for i in item.stash.get(_IDS, []) if i not in set(ids)]


def reproduce_command(config, nodeid: str) -> str:
    """One line that runs `nodeid` again as this run did: same subject, seed, profile and timescale."""
    runner = shlex.split(os.environ.get(RUNNER_ENV, "python -m pytest"))  # the installed suite sets its own
    parts = [*runner, nodeid, "-n", "0", f"--hypothesis-seed={config.getoption('hypothesis_seed')}",
             f"--conformance-profile={config.getoption('--conformance-profile')}", f"--conformance-timescale={tm.SCALE:g}"]
    for opt in ("--impl", "--receiver-cmd", "--sender-cmd", "--protocol-version", "--xfails-file", "--conformance-replay"):
        value = config.getoption(opt)
        if value and not (opt == "--impl" and _program(config)) and not (opt == "--protocol-version" and value == "1.1"):
            parts.append(f"{opt}={value}")
    return shlex.join(parts)


def replay_note(config) -> str | None:
    """What this process replayed of saved examples, if anything (said beside every failure it finds)."""
    db = getattr(config, "_conformance_replay", None)
    if db is None or not db.replayed:
        return None
    return (f"this run first replayed {db.replayed} example(s) saved by an earlier run in {db.folder} "
            "(--conformance-replay); delete that folder to start afresh")


def pytest_report_header(config):
    if hasattr(config, "workerinput"):
        return None
    seed = config.getoption("hypothesis_seed")
    db = getattr(config, "_conformance_replay", None)
    examples = f"examples drawn afresh from seed {seed} (run again with --hypothesis-seed={seed})"
    if db is not None:
        examples += f"; first replaying the {db.saved()} saved in {db.folder} (--conformance-replay)"
    judged = config.getoption("--protocol-version")
    return [f"weightsync conformance: checks protocol {SPEC_VERSION}"
            + (f", judging as {judged}" if judged != SPEC_VERSION else "") + f" (the spec: {SPEC_DIR})",
            f"weightsync conformance: {examples}"]


def _check_modules_fit_role(config) -> None:
    """A module named on the command line is collected whatever pytest_ignore_collect says: one that a program
    or one-role module cannot be tested by is a usage error, not a run of tests that cannot decide."""
    role = _role(config)
    if not role:
        return
    named = {Path(arg.partition("::")[0]) for arg in config.args}
    other = sorted(p.name for p in named if p.suffix == ".py" and p.stem.startswith("test_")
                   and p.stem not in PROGRAM_MODULES[role])
    if other:
        what = f"a {role} program" if _program(config) else f"a {role}-only module (API-12)"
        raise pytest.UsageError(f"{', '.join(other)}: not run for {what}, which is tested by "
                                f"{', '.join(m + '.py' for m in PROGRAM_MODULES[role])} alone")


def impl(config):
    return config._conformance_impl


def pytest_ignore_collect(collection_path, config):
    """Program mode, and a one-role module, collect only that role's tests (a program's run imports no torch and no
    binding); a run of both roles leaves out the sender-program tests (test_wire checks its Sender)."""
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        role = _role(config)
        if role:
            return collection_path.stem not in PROGRAM_MODULES[role]
        if collection_path.stem in PROGRAM_MODULES["sender"]:
            return True
    return None


# ---- fixtures ---------------------------------------------------------------------------------

_CLEANUPS = pytest.StashKey[list]()
_RECHECKED = pytest.StashKey[str]()


def _on_cleanup(request, fn) -> None:
    """Run `fn` before a re-check of this test (and at its teardown, by the fixture itself)."""
    request.node.stash.setdefault(_CLEANUPS, []).append(fn)


@pytest.fixture(scope="session")
def ws(request):
    """The implementation under test (the --impl module)."""
    return impl(request.config)


@pytest.fixture(scope="session")
def pool(request):
    """Receiver processes for the whole session, reused by every test (pool.Pool)."""
    from .pool import Pool

    p = Pool(request.config.getoption("--impl"), POOL_SIZE, os.environ.get(START_ENV) or "spawn")
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

    _on_cleanup(request, close_all)
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

    _on_cleanup(request, teardown_all)
    yield make
    teardown_all()


# ---- collection ---------------------------------------------------------------------------------

_IDS = pytest.StashKey[list]()
_LACKS = pytest.StashKey[list]()
_LISTED = pytest.StashKey[bool]()  # the test itself is listed in --xfails-file


def pytest_collection_modifyitems(config, items):
    caps = impl(config).CAPABILITIES if impl(config) is not None else frozenset()
    listed_tests, _ = config._conformance_xfails
    added = config._conformance_later
    for item in items:
        ids = []
        for mark in item.iter_markers("req"):
            ids.extend(mark.args)
        bad = [i for i in ids if not ID_RE.match(i)]
        if bad:
            raise pytest.UsageError(f"{item.nodeid}: malformed requirement IDs {bad}")
        item.stash[_IDS] = sorted(set(ids))
        item.stash[_LISTED] = item.nodeid in listed_tests or item.nodeid.partition("[")[0] in listed_tests or \
            item.originalname in listed_tests or item.name in listed_tests
        later = sorted(set(ids) & added)
        if later and item.originalname == "test_protocol_state_machine":
            later = []  # its rules for 1.1's requirements are switched off there; every rule 1.0 defines runs
        if later:
            item.stash[_LACKS] = [f"protocol 1.1 ({', '.join(later)})"]
            item.add_marker(pytest.mark.skip(reason=f"{', '.join(later)} added in protocol 1.1; not run for "
                                                    "--protocol-version 1.0"))
            continue
        if _program(config):
            continue
        lacking = [c for mark in item.iter_markers("needs") for c in mark.args if c not in caps]
        item.stash[_LACKS] = lacking
        if lacking:
            item.add_marker(pytest.mark.skip(
                reason=f"capability {', '.join(lacking)} not declared in {config.getoption('--impl')}.CAPABILITIES"))
    for item in items:
        # The suite bounds itself, whatever the implementation does: a test past its budget (re-check included)
        # is a hang, judged by where it hung (verdict.judge), and the run goes on.
        asked = max((m.args[0] for m in item.iter_markers("timeout") if m.args), default=tm.TEST_BUDGET)
        item.add_marker(pytest.mark.timeout(tm.budget(asked)), append=False)
    # Tests that wait out a long bound first: spread over processes, they overlap the rest (LPT order).
    items.sort(key=lambda item: -max((m.args[0] for m in item.iter_markers("waits")), default=0))


# ---- the re-check of failures that are only about time ---------------------------------------------------


def _judge(exc: BaseException, config):
    """judge() with what it needs to know of the implementation: its timeout error and its packages."""
    ws = impl(config)
    if ws is None:
        return judge(exc)
    return judge(exc, (ws.SyncTimeoutError,), implementation_packages(ws))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Every test under the backstop's watch (conformance/backstop.py): a hang pytest-timeout cannot end."""
    ws = impl(item.config)
    packages = implementation_packages(ws) if ws is not None else frozenset()
    finish = None if hasattr(item.config, "workerinput") else (lambda record: _finish_hung(item, record))
    timer = backstop.watch(item.nodeid, item.stash.get(_IDS, []), _budget(item), packages, finish)
    try:
        return (yield)
    finally:
        timer.cancel()


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        backstop.clean()


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
        pytest_terminal_summary(tr, pytest.ExitCode.INTERRUPTED, config)
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


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """A failure that is only about time is run again: first, when the machine measured now is busier than the
    run's timescale allows, at the timescale it has now (held there: passed, as if the run had started now); then
    at tm.RECHECK times every bound (or that timescale, if larger).

    Held at the larger scale: inconclusive (the machine was too slow for the first one).
    Failing again: a violation, of what the second failure names."""
    started = time.monotonic()
    try:
        return (yield)
    except BaseException as first:  # noqa: BLE001 - judged, then re-raised or re-checked
        j = _judge(first, pyfuncitem.config)
        if j.kind != "timing":
            raise
        first_text = j.reason
    took = time.monotonic() - started
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    # The load the test met, measured now: busier than the run's timescale allows, the test runs again at the
    # timescale the machine has now, as if the run had started now (its first measure is half a second's).
    given = pyfuncitem.config._conformance_measure.get("timescale_given", 1.0)
    busy, recheck = tm.reruns(tm.SCALE, given * tm.scale_for(tm.calibrate()))
    if busy is not None and not tm.fits(took, busy + recheck if busy < recheck else busy, _budget(pyfuncitem)):
        busy = None  # the hang budget holds the re-check only: a test is never called hung for being re-run
    if busy is not None:
        _clean(pyfuncitem)
        with tm.scaled(busy):
            scale = tm.SCALE
            try:
                pyfuncitem.obj(**args)
                pyfuncitem.user_properties.append(("timescale_measured_during_the_test", scale))
                return None
            except BaseException as again:  # noqa: BLE001
                j2 = _judge(again, pyfuncitem.config)
                if j2.kind != "timing":
                    raise
                if busy >= recheck:  # that run was as generous as the re-check: it is the re-check
                    pyfuncitem.stash[_RECHECKED] = first_text
                    _missed_again(j2, first_text, scale, again)
    _clean(pyfuncitem)
    pyfuncitem.stash[_RECHECKED] = first_text
    with tm.scaled(recheck):
        scale = tm.SCALE
        try:
            pyfuncitem.obj(**args)
        except BaseException as second:  # noqa: BLE001
            _missed_again(_judge(second, pyfuncitem.config), first_text, scale, second)
    raise Inconclusive(f"only a bound was missed ({first_text}); re-checked at timescale {scale:g}, it held. "
                       f"The machine was too busy for timescale {scale / tm.RECHECK:g}: re-run with "
                       f"--conformance-timescale={tm.RECHECK:g}")


def _missed_again(j, first_text: str, scale: float, exc: BaseException) -> None:
    """Raises the verdict on a re-run that failed too: on time again, by missed_again; anything else, as it is."""
    if j.kind == "timing" and j.ids:
        now = tm.calibrate()
        raise missed_again(j.reason, first_text, scale, tm.scale_for(now), now) from exc
    raise exc


def _budget(item) -> float:
    """The wall time the suite gave this test before it counts as hung (its timeout mark, set at collection)."""
    return max((m.args[0] for m in item.iter_markers("timeout") if m.args), default=tm.budget())


def _clean(pyfuncitem) -> None:
    """What the last run of a test left (its rigs, peers, workers' state), undone before it runs again."""
    for cleanup in pyfuncitem.stash.get(_CLEANUPS, []):
        try:
            cleanup()
        except BaseException:  # noqa: BLE001 - a stuck object of the first run: the re-check starts anew
            pass


# ---- reports ---------------------------------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Each report carries the test's requirement IDs and, when it did not pass, its verdict.

    An inconclusive failure becomes a skip with its own status (INCONCLUSIVE), so it neither
    fails the run nor stops -x; the terminal summary lists it with its reason."""
    rep = yield
    rep.conformance_ids = item.stash.get(_IDS, [])
    rep.conformance_clauses = inventory.take()  # the clause conditions the harness saw during this phase
    _, known_ids = item.config._conformance_xfails
    listed = item.stash.get(_LISTED, False)
    if rep.failed and call.excinfo is not None:
        j = _judge(call.excinfo.value, item.config)
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
            elif _RECHECKED in item.stash:
                reason = (f"a bound missed ({item.stash[_RECHECKED]}) and missed again at timescale "
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
        missing = item.stash.get(_LACKS, []) or _program(item.config) or \
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


def _timing(config, nodeid: str) -> dict:
    """A test's `seconds` (setup, call and teardown) and the `process` that ran it, for the JSON report."""
    seconds, process = config._conformance_timing.get(nodeid, (0.0, "main"))
    return {"seconds": round(seconds, 3), "process": process}


def _table(config) -> dict[str, dict]:
    """The requirement table of this run (report.table), one-role subjects' unrun requirements included."""
    role = _role(config)
    note = None
    if role:
        what = f"a {role} program" if _program(config) else f"a {role}-only module (API-12)"
        note = f"(needs both roles of the binding: not run for {what})"
    return reporting.table(config._conformance_tests, spec_ids(), note)


def spec_ids() -> list[str]:
    return sorted({m for p in SPEC_DIR.glob("*.md") for m in reporting.SPEC_ID.findall(p.read_text())}, key=reporting.id_key)


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
            r = result[cid]
            why = f" (inventory: {r['gap']})" if r["gap"] else ""
            tr.write_line(f"  {cid}: never exercised: {r['condition']}{why}")
    return result


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput"):
        return
    outcomes = {t["outcome"] for t in session.config._conformance_tests.values()}
    if VIOLATED in outcomes and exitstatus in (0, 1, 2):  # 2: -x stopped an xdist run
        session.exitstatus = 1
    elif INCONCLUSIVE in outcomes and exitstatus in (0, 1):
        session.exitstatus = INCONCLUSIVE_EXIT


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controlling process reports the whole run
    rows = _table(config)  # empty when no test that ran names a requirement: still reported, JSON included
    tr = terminalreporter
    program = _program(config)
    if program:
        # The subject is a program; the suite's scripted peers play the other side.
        tr.section(f"weightsync conformance: {_role(config)} program {program!r}")
        other = "trainer: the suite's scripted sender" if _role(config) == "receiver" else \
            "workers: the suite's scripted receivers"
        tr.write_line(f"{other} (conformance/peers.py)")
        caps: list[str] = []
    else:
        role = _role(config)
        tr.section(f"weightsync conformance: {config.getoption('--impl')}" + (f" ({role} only)" if role else ""))
        caps = sorted(impl(config).CAPABILITIES)
        tr.write_line(f"capabilities declared: {', '.join(caps) or '(none)'}")
        if role:
            tr.write_line("the other role: the suite's scripted " + ("sender" if role == "receiver" else "receivers")
                          + " (conformance/peers.py); its requirements are not implemented here")
    m = config._conformance_measure
    tr.write_line(f"timescale {tm.SCALE:g} (machine load {m.get('load', 0):.1f}, round trip "
                  f"{m.get('rtt_ms', 0):.2f} ms; given {m.get('timescale_given', 1):g})")
    for line in pytest_report_header(config):
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
    counts = defaultdict(int)
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
            json.dump(
                {
                    "schema": reporting.SCHEMA,
                    "interrupted": exitstatus == pytest.ExitCode.INTERRUPTED,
                    "spec_version": SPEC_VERSION,
                    "suite": {"version": _suite_version(),
                              "digest": reporting.suite_digest(Path(__file__).resolve().parent, SPEC_DIR)},
                    "impl": None if program else config.getoption("--impl"),
                    "receiver_cmd": config.getoption("--receiver-cmd"),
                    "sender_cmd": config.getoption("--sender-cmd"),
                    "capabilities": caps,
                    "roles": [_role(config)] if _role(config) else list(ROLES),
                    "protocol_version": config.getoption("--protocol-version"),
                    "xfails_file": config.getoption("--xfails-file"),
                    "profile": config.getoption("--conformance-profile"),
                    "timescale": tm.SCALE,
                    "hypothesis_seed": config.getoption("hypothesis_seed"),
                    "replayed_from": str(config._conformance_replay.folder)
                    if getattr(config, "_conformance_replay", None) else None,
                    "measure": m,
                    "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                    "outcomes": [PASSED, VIOLATED, INCONCLUSIVE, NOT_IMPLEMENTED, CHECKED_NOTHING, XFAIL, XPASS],
                    "requirements": reporting.annotate(rows, texts),
                    "tests": {n: {**t, **_timing(config, n)} for n, t in tests.items()},
                    "violated": violated,
                    "inconclusive": inconclusive,
                    "xfail": known,
                    "xpass": xpassed,
                    "clauses": clauses,
                },
                f,
                indent=2,
            )
        tr.write_line(f"requirement table written to {os.path.abspath(path)}")
