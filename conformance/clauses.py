"""The clause inventory (spec/clauses/*.toml) and the conditions a run made true.

A requirement is tested when a test names its ID; a *clause* of it is exercised only
when a test makes the clause's condition true (an Ack(error) from a zero-copy receiver,
an Init lacking one field, a lease shorter than the default). The inventory splits each
requirement into clauses, each with its condition and the tests that make it true. Where
the condition is one the harness can see happen, the clause says `probe = true` and the
harness calls `occurred(clause)` at the point it saw it; the run's clause report then
lists each clause whose condition never occurred.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .names import SPEC_DIR

CLAUSE_DIR = SPEC_DIR / "clauses"

#: Clause IDs whose condition occurred in this process during the current test (conftest takes them per test,
#: so each report carries them, whichever xdist process ran it).
_SEEN: set[str] = set()
STATE_MACHINE = "state machine: "


def occurred(clause: str) -> None:
    """Record that the condition of `clause` (e.g. "ZC-2.b") was true in this run, as the harness saw it."""
    _SEEN.add(clause)


def take() -> list[str]:
    """The clauses seen since the last call (conftest attaches them to the test's report)."""
    out = sorted(_SEEN)
    _SEEN.clear()
    return out


@dataclass(frozen=True)
class Clause:
    id: str  # "ZC-2.b"
    requirement: str  # "ZC-2"
    text: str  # the clause, as the spec says it
    condition: str  # what must be true for a test to exercise it
    tests: tuple[str, ...]  # "test_file.py::test_name" (any parametrization), or "state machine: <rule>"
    probe: bool  # the harness reports the condition itself (occurred)
    source: Path
    gap: str = ""  # why no test makes the condition true yet (the inventory's open debt, listed in the report)
    unobservable: str = ""  # why no test can, through the binding
    reference: str = ""  # a choice of the reference alone (no binding is held to it): its own tests that check it


def load(directory: Path = CLAUSE_DIR) -> dict[str, Clause]:
    """Every clause of the inventory, by ID, in the spec's order."""
    out: dict[str, Clause] = {}
    for path in sorted(Path(directory).glob("*.toml")):
        with path.open("rb") as f:
            data = tomllib.load(f)
        for req, clauses in data.items():
            for letter, c in clauses.items():
                cid = f"{req}.{letter}"
                if cid in out:
                    raise ValueError(f"{path.name}: clause {cid} defined twice")
                out[cid] = Clause(cid, req, c["text"], c["condition"], tuple(c.get("tests", ())),
                                  bool(c.get("probe", False)), path, c.get("gap", "") or c.get("pending", ""),
                                  c.get("unobservable", ""), c.get("reference", ""))
    return out


def matches(entry: str, nodeid: str) -> bool:
    """Whether a collected test (`conformance/test_x.py::test_y[p]`) is the inventory's `test_x.py::test_y[p]`;
    an entry without a parametrization matches every one."""
    path, _, name = nodeid.partition("::")
    here = f"{path.rsplit('/', 1)[-1]}::{name}"
    return here == entry or (("[" not in entry) and here.partition("[")[0] == entry)


def exercised(inventory: dict[str, Clause], tests: dict[str, dict], seen: dict[str, list[str]],
              passed: str = "passed") -> dict[str, dict]:
    """Clause -> whether this run exercised it, and by which tests.

    `tests` maps node IDs to their outcome (conftest.Outcomes); `seen` maps a clause to the tests during which its
    condition occurred. A probed clause counts only where its condition occurred in a test that passed; any other
    counts where a test the inventory lists for it passed (the state machine's rules through the state machine).
    """
    ok = {n for n, t in tests.items() if t.get("outcome") == passed}
    machine = [n for n in ok if "test_state_machine.py::test_protocol_state_machine" in n]
    out = {}
    for cid, c in inventory.items():
        by = {n for n in seen.get(cid, ()) if n in ok}
        if not c.probe:
            by |= {n for e in c.tests for n in (machine if e.startswith(STATE_MACHINE) else ok)
                   if e.startswith(STATE_MACHINE) or matches(e, n)}
        by = sorted(by)
        out[cid] = {"exercised": bool(by), "by": by[:5], "probe": c.probe, "condition": c.condition,
                    "gap": c.gap, "unobservable": c.unobservable, "reference": c.reference}
    return out


def never(result: dict[str, dict]) -> list[str]:
    """The clauses this run never exercised, those no test can observe and the reference's own choices (checked
    by its own tests, not by the suite) left out."""
    return [cid for cid, r in result.items() if not r["exercised"] and not r["unobservable"]
            and not r.get("reference")]


def never_line(cid: str, r: dict) -> str:
    """How a report lists a clause never exercised: its condition, and why no test makes it true where the
    inventory says."""
    why = f" (inventory: {r['gap']})" if r["gap"] else ""
    return f"  {cid}: never exercised: {r['condition']}{why}"
