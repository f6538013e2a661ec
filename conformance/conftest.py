"""Options, implementation selection, capability skips and the requirement report.

    pytest conformance [--impl=MODULE] [--conformance-profile=default|thorough|ci]
                       [--conformance-timescale=FACTOR] [--conformance-json=PATH]
                       [--receiver-cmd="PROGRAM {url}"]

The module named by --impl (default: weightsync) must expose the spec's Python
binding (API-1..API-5). Nothing else of it is used.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import time
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, Phase, settings

from .names import KNOWN_CAPABILITIES, REQUIRED_NAMES, TIMESCALE_ENV
ID_RE = re.compile(r"^[A-Z]+(?:-[A-Z])?-\d+$")
POOL_SIZE = 3

_common = dict(
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
        help="default: a few minutes; thorough: many more Hypothesis examples, for release checks; "
        "ci: as default without shrinking failures (pass/fail only)",
    )
    group.addoption(
        "--conformance-timescale",
        default=None,
        type=float,
        metavar="FACTOR",
        help="multiply every timeout and bound of the suite by FACTOR (default 1, or $" + TIMESCALE_ENV + ")",
    )
    group.addoption("--conformance-json", default=None, metavar="PATH", help="write the requirement table as JSON")
    group.addoption(
        "--receiver-cmd",
        default=None,
        metavar="COMMAND",
        help="test an outside receiver program instead of the binding's Receiver: COMMAND with {url} in it, "
        "following the test-control contract of docs/conformance.md; only the receiver tests run",
    )


def _load_impl(name: str):
    try:
        mod = importlib.import_module(name)
    except Exception as e:  # noqa: BLE001 - any import failure is a usage error here
        raise pytest.UsageError(f"--impl={name}: cannot import it ({type(e).__name__}: {e})") from None
    missing = [n for n in REQUIRED_NAMES if not hasattr(mod, n)]
    if missing:
        raise pytest.UsageError(
            f"--impl={name} does not expose the weightsync binding: missing {', '.join(missing)} (API-1..API-5). "
            "Write a shim module that re-exports these names (docs/conformance.md)."
        )
    caps = mod.CAPABILITIES
    if not isinstance(caps, frozenset) or not all(isinstance(c, str) for c in caps):
        raise pytest.UsageError(f"--impl={name}: CAPABILITIES must be a frozenset of str, got {caps!r} (API-5)")
    unknown = sorted(caps - KNOWN_CAPABILITIES)
    if unknown:
        raise pytest.UsageError(
            f"--impl={name}: CAPABILITIES names unknown parts {unknown}; known: {sorted(KNOWN_CAPABILITIES)} (API-5)"
        )
    return mod


def pytest_configure(config):
    config.addinivalue_line("markers", "req(*ids): the spec requirement IDs a test checks")
    config.addinivalue_line("markers", "needs(*capabilities): optional parts (CAPABILITIES) the test needs")
    scale = config.getoption("--conformance-timescale")
    if scale is not None:
        if not scale > 0:
            raise pytest.UsageError(f"--conformance-timescale must be positive, got {scale}")
        # Before any test module imports conformance.timing; spawned workers inherit it.
        os.environ[TIMESCALE_ENV] = repr(scale)
    name = config.getoption("--impl")
    config._conformance_impl = _load_impl(name)
    config._conformance_results = {}
    config._conformance_reqs = {}
    if not config.getoption("--hypothesis-profile", default=None):
        settings.load_profile(f"conformance-{config.getoption('--conformance-profile')}")


def impl(config):
    return config._conformance_impl


@pytest.fixture(scope="session")
def ws(request):
    """The implementation under test (the --impl module)."""
    return impl(request.config)


@pytest.fixture(scope="session")
def pool(request):
    """Receiver processes for the whole session, reused by every test (pool.Pool)."""
    from .pool import Pool

    p = Pool(request.config.getoption("--impl"), POOL_SIZE)
    yield p
    p.close()


@pytest.fixture
def closing():
    """Register a scripted peer (or anything with close()); each is closed at teardown."""
    made = []
    yield made.append
    for p in made:
        p.close()


@pytest.fixture
def rigs(ws, pool):
    """Make a Rig (sender + connected workers + model); every rig is closed at teardown."""
    from .rig import Rig

    made = []

    def make(*args, **kwargs):
        r = Rig(ws, pool, *args, **kwargs)
        made.append(r)
        return r

    yield make
    for r in made:
        r.teardown()


def pytest_collection_modifyitems(config, items):
    caps = impl(config).CAPABILITIES
    outside = config.getoption("--receiver-cmd")
    for item in items:
        if outside and item.module.__name__.rpartition(".")[2] not in ("test_receiver_wire", "test_traceability"):
            item.add_marker(pytest.mark.skip(reason="--receiver-cmd: only the receiver tests run"))
        ids = []
        for mark in item.iter_markers("req"):
            ids.extend(mark.args)
        bad = [i for i in ids if not ID_RE.match(i)]
        if bad:
            raise pytest.UsageError(f"{item.nodeid}: malformed requirement IDs {bad}")
        config._conformance_reqs[item.nodeid] = sorted(set(ids))
        for mark in item.iter_markers("needs"):
            lacking = [c for c in mark.args if c not in caps]
            if lacking:
                item.add_marker(
                    pytest.mark.skip(
                        reason=f"capability {', '.join(lacking)} not declared in "
                        f"{config.getoption('--impl')}.CAPABILITIES"
                    )
                )


_ID = r"[A-Z]+(?:-[A-Z])?-\d+"
VIOLATED_RE = re.compile(rf"\b((?:{_ID})(?:, {_ID})*) violated")


_RAISED = re.compile(r"\b\w*(Error|Exception|Failure|Group)\b: ")


def _error_lines(text: str) -> list[str]:
    """The lines of a failure report that carry an error's message, not the source shown around it."""
    out = []
    for line in text.splitlines():
        bare = line.lstrip(" |+-")
        if line.startswith("E ") or _RAISED.match(bare):
            out.append(line)
    return out


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    results = item.config._conformance_results
    prev = results.get(item.nodeid)
    if rep.failed:
        # A failure message that says "ID violated" blames that ID; otherwise every ID of the test.
        named = [i for line in _error_lines(rep.longreprtext or "") for group in VIOLATED_RE.findall(line)
                 for i in group.split(", ")]
        blamed = sorted(set(named), key=_id_key) if named else None
        if prev is None or prev[0] != "failed":
            results[item.nodeid] = ("failed", blamed)
    elif rep.skipped and prev is None:
        results[item.nodeid] = ("skipped", None)
    elif rep.when == "call" and rep.passed and prev is None:
        results[item.nodeid] = ("passed", None)


def _table(config):
    per_id: dict[str, dict[str, list[str]]] = defaultdict(lambda: {"passed": [], "failed": [], "skipped": []})
    for nodeid, ids in config._conformance_reqs.items():
        outcome, blamed = config._conformance_results.get(nodeid, (None, None))
        if outcome is None:
            continue
        if outcome == "failed" and blamed is not None:
            for i in blamed:
                per_id[i]["failed"].append(nodeid)
            continue  # the test's other IDs were neither shown to hold nor to fail
        for i in ids:
            per_id[i][outcome].append(nodeid)
    rows = {}
    for i in sorted(per_id, key=_id_key):
        d = per_id[i]
        status = "failed" if d["failed"] else "passed" if d["passed"] else "skipped"
        rows[i] = {"status": status, **{k: len(v) for k, v in d.items()}, "failed_tests": d["failed"]}
    return rows


def _id_key(i: str):
    head, _, num = i.rpartition("-")
    return (head, int(num) if num.isdigit() else 0)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    rows = _table(config)
    if not rows:
        return
    tr = terminalreporter
    outside = config.getoption("--receiver-cmd")
    if outside:
        # The subject is the receiver program; the suite's scripted sender plays the trainer.
        tr.section(f"weightsync conformance: receiver program {outside!r}")
        tr.write_line("trainer: the suite's scripted sender (conformance/peers.py)")
    else:
        tr.section(f"weightsync conformance: {config.getoption('--impl')}")
        caps = sorted(impl(config).CAPABILITIES)
        tr.write_line(f"capabilities declared: {', '.join(caps) or '(none)'}")
    sections: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for i, row in rows.items():
        sections[i.split("-")[0]][row["status"]] += 1
    tr.write_line("")
    tr.write_line(f"{'requirement':<12} {'status':<8} passed failed skipped")
    for i, row in rows.items():
        tr.write_line(f"{i:<12} {row['status']:<8} {row['passed']:>6} {row['failed']:>6} {row['skipped']:>7}")
    tr.write_line("")
    tr.write_line("per section: " + "; ".join(
        f"{s}: " + ", ".join(f"{n} {k}" for k, n in sorted(c.items())) for s, c in sorted(sections.items())
    ))
    violated = [i for i, r in rows.items() if r["status"] == "failed"]
    if violated:
        tr.write_line(f"requirements violated: {', '.join(violated)}", red=True, bold=True)
    else:
        tr.write_line("requirements violated: none", green=True)
    path = config.getoption("--conformance-json")
    if path:
        with open(path, "w") as f:
            json.dump(
                {
                    "impl": config.getoption("--impl"),
                    "capabilities": caps,
                    "profile": config.getoption("--conformance-profile"),
                    "timescale": float(os.environ.get(TIMESCALE_ENV, "1")),
                    "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                    "requirements": rows,
                    "violated": violated,
                },
                f,
                indent=2,
            )
        tr.write_line(f"requirement table written to {os.path.abspath(path)}")
