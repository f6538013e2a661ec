"""conformance/tools/clauses.py: the clauses no run of one implementation exercised, over several JSON reports."""

from __future__ import annotations

import json

import pytest

from conformance.tools import clauses as tool


def entry(exercised: bool, condition: str = "c", gap: str = "", unobservable: str = "") -> dict:
    return {"exercised": exercised, "by": [], "probe": False, "condition": condition, "gap": gap,
            "unobservable": unobservable}


def write(tmp_path, name: str, clauses: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"schema": 1, "clauses": clauses}))
    return str(path)


def test_a_clause_counts_as_exercised_when_any_run_exercised_it(tmp_path, capsys):
    binding = write(tmp_path, "impl.json", {"A-1.a": entry(True), "A-1.b": entry(False, "a sender's frames read"),
                                            "A-2.a": entry(False, "a GPU", gap="needs a GPU"),
                                            "A-3.a": entry(False, unobservable="inside the process")})
    program = write(tmp_path, "sender.json", {"A-1.a": entry(True), "A-1.b": entry(True), "A-2.a": entry(False),
                                              "A-3.a": entry(False)})
    assert tool.main([binding, program]) == 0
    out = capsys.readouterr().out
    assert "together: 3 of 4" in out  # as in one run's report, a clause no test can observe is not listed
    assert "A-2.a: never exercised: a GPU (inventory: needs a GPU)" in out
    assert "A-1.b" not in out and "A-3.a" not in out
    assert tool.main([binding, program, "--strict"]) == 1
    assert tool.main([program, "--strict"]) == 1
    assert tool.merged([json.load(open(binding)), json.load(open(program))])["A-1.a"]["runs"] == 2


def test_reports_of_other_inventories_or_without_clauses_are_refused(tmp_path, capsys):
    one = write(tmp_path, "one.json", {"A-1.a": entry(True)})
    other = write(tmp_path, "other.json", {"B-1.a": entry(True)})
    empty = write(tmp_path, "empty.json", {})
    assert tool.main([one, other]) == 2
    assert "another clause inventory" in capsys.readouterr().err
    assert tool.main([one, empty]) == 2
    assert "no clauses" in capsys.readouterr().err
    with pytest.raises(ValueError):
        tool.merged([{"clauses": {"A-1.a": entry(True)}}, {"clauses": {"A-1.a": entry(True), "A-1.b": entry(True)}}])


def test_a_choice_of_the_reference_is_not_listed_as_never_exercised(tmp_path, capsys):
    """A clause the inventory marks `reference` (a choice of the reference alone, which no binding is held to)
    is left out of what a run never exercised, as an unobservable one is."""
    own = {**entry(False, "over 1 GiB"), "reference": "tests/test_x.py::test_y"}
    report = write(tmp_path, "impl.json", {"A-1.a": entry(True), "A-2.a": own})
    assert tool.main([report, "--strict"]) == 0
    assert "A-2.a" not in capsys.readouterr().out


def test_each_choice_of_the_reference_names_tests_of_its_own_that_exist():
    """The `reference` of a clause names the reference's own tests (tests/FILE.py::NAME), each defined there."""
    import re
    from pathlib import Path

    from conformance.clauses import load

    root = Path(__file__).resolve().parents[1]
    marked = {cid: c.reference for cid, c in load().items() if c.reference}
    assert marked, "no clause of the inventory is marked as the reference's own choice"
    missing = []
    for cid, names in marked.items():
        entries = names.split()
        assert entries and all(re.fullmatch(r"tests/\w+\.py::\w+", e) for e in entries), (cid, names)
        for e in entries:
            path, _, name = e.partition("::")
            if not re.search(rf"^def {name}\(", (root / path).read_text(), re.M):
                missing.append(f"{cid}: {e}")
    assert not missing, missing
