"""Which tests run, and what each one claims to check.

Collection reads each test's marks once: the requirement IDs it checks (`req`), the capabilities it needs
(`needs`, a skip when the module does not declare one), whether the user listed it as a known gap
(--xfails-file), and its hang budget (a `timeout` mark). The reports read what is stashed here.
"""

from __future__ import annotations

import pytest

from . import timing as tm
from .options import ID_RE
from .subject import PROGRAM_MODULES, impl, program_of, role_of

#: The requirement IDs a test checks (its `req` marks, less those `not_checked` takes back).
IDS = pytest.StashKey[list]()
#: Why a skipped test is *not implemented*: the capabilities (or protocol version) its subject lacks.
LACKS = pytest.StashKey[list]()
#: The test itself is listed in --xfails-file.
LISTED = pytest.StashKey[bool]()


def pytest_ignore_collect(collection_path, config):
    """Program mode, and a one-role module, collect only that role's tests (a program's run imports no torch and no
    binding); a run of both roles leaves out the sender-program tests (test_wire checks its Sender)."""
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        role = role_of(config)
        if role:
            return collection_path.stem not in PROGRAM_MODULES[role]
        if collection_path.stem in PROGRAM_MODULES["sender"]:
            return True
    return None


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
        item.stash[IDS] = sorted(set(ids))
        item.stash[LISTED] = item.nodeid in listed_tests or item.nodeid.partition("[")[0] in listed_tests or \
            item.originalname in listed_tests or item.name in listed_tests
        later = sorted(set(ids) & added)
        if later and item.originalname == "test_protocol_state_machine":
            later = []  # its rules for 1.1's requirements are switched off there; every rule 1.0 defines runs
        if later:
            item.stash[LACKS] = [f"protocol 1.1 ({', '.join(later)})"]
            item.add_marker(pytest.mark.skip(reason=f"{', '.join(later)} added in protocol 1.1; not run for "
                                                    "--protocol-version 1.0"))
            continue
        if program_of(config):
            continue
        lacking = [c for mark in item.iter_markers("needs") for c in mark.args if c not in caps]
        item.stash[LACKS] = lacking
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


def budget(item) -> float:
    """The wall time the suite gave this test before it counts as hung (its timeout mark, set at collection)."""
    return max((m.args[0] for m in item.iter_markers("timeout") if m.args), default=tm.budget())


def not_checked(item, ids) -> None:
    """These requirements were not checked by this test after all (a rule switched off): not reported for it."""
    item.stash[IDS] = [i for i in item.stash.get(IDS, []) if i not in set(ids)]
