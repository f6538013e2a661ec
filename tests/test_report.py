"""The suite's report reads without the docs (conformance/report.py): pure, no processes."""

from __future__ import annotations

from pathlib import Path

from conformance import report
from conformance.verdict import CHECKED_NOTHING, INCONCLUSIVE, NOT_IMPLEMENTED, PASSED, SKIPPED, VIOLATED

SPEC = Path(__file__).resolve().parent.parent / "spec"


def test_every_requirement_has_a_plain_one_line_text_and_an_anchor():
    texts = report.statements(SPEC)
    assert len(texts) > 100
    for i, t in texts.items():
        assert t["text"] and "\n" not in t["text"] and len(t["text"]) <= 140, (i, t)
        assert "](" not in t["text"] and "`" not in t["text"] and "**" not in t["text"], (i, t["text"])
        page, _, anchor = t["spec"].partition("#")
        assert anchor == i and f'<a id="{i}"></a>' in (SPEC / page).read_text(), (i, t["spec"])


def test_one_line_keeps_whole_sentences_and_drops_markup():
    s = "— A [dead](08-failures.md#SEND-3) receiver is `detected` at once. It MUST raise within ten seconds. More."
    assert report.one_line(s) == "A dead receiver is detected at once. It MUST raise within ten seconds."
    assert report.one_line("x" * 300).endswith("…") and len(report.one_line("x" * 300)) == 140


def test_the_spec_version_is_read_from_the_spec():
    assert report.spec_version(SPEC) == "1.1"


def _t(outcome, *ids, blamed=()):
    return {"outcome": outcome, "ids": list(ids), "blamed": list(blamed)}


def test_a_requirement_with_tests_not_run_is_passed_in_part_never_plain_passed():
    rows = report.table({"a": _t(PASSED, "WIRE-7"), "b": _t(NOT_IMPLEMENTED, "WIRE-7"), "c": _t(PASSED, "ACK-1"),
                         "d": _t(SKIPPED, "CUDA-1")}, ["ACK-1", "CUDA-1", "WIRE-7"], None)
    assert (rows["WIRE-7"]["status"], rows["WIRE-7"]["partial"]) == (PASSED, True)
    assert report.shown_status(rows["WIRE-7"]) == "passed in part"
    assert (rows["ACK-1"]["status"], rows["ACK-1"]["partial"]) == (PASSED, False)
    assert (rows["CUDA-1"]["status"], rows["CUDA-1"]["partial"]) == (SKIPPED, False)
    assert any(line.split()[:4] == ["WIRE-7", "passed", "in", "part"] for line in report.table_lines(rows))


def test_a_test_that_checked_nothing_never_makes_a_requirement_passed():
    """A requirement whose only test checked nothing says so; beside a passed test it is passed in part."""
    rows = report.table({"a": _t(CHECKED_NOTHING, "SLOT-2"), "b": _t(CHECKED_NOTHING, "ZC-1"), "c": _t(PASSED, "ZC-1")},
                        ["SLOT-2", "ZC-1"], None)
    assert (rows["SLOT-2"]["status"], rows["SLOT-2"]["partial"]) == (CHECKED_NOTHING, False)
    assert rows["SLOT-2"][CHECKED_NOTHING] == 1
    assert report.shown_status(rows["ZC-1"]) == "passed in part"


def test_only_the_blamed_ids_of_a_violation_are_violated_and_one_role_leaves_the_rest_not_implemented():
    rows = report.table({"a": _t(VIOLATED, "ACK-1", "ACK-2", blamed=["ACK-2"]), "b": _t(INCONCLUSIVE, "SEND-1")},
                        ["ACK-1", "ACK-2", "SEND-1", "ZC-1"], "(not run for a receiver program)")
    assert rows["ACK-2"]["status"] == VIOLATED and rows["ACK-2"]["violated_tests"] == ["a"]
    assert "ACK-1" not in rows or rows["ACK-1"]["status"] != VIOLATED
    assert rows["SEND-1"]["status"] == INCONCLUSIVE
    assert rows["ZC-1"]["status"] == NOT_IMPLEMENTED


def test_the_legend_defines_every_word_the_table_uses():
    for word in (PASSED, VIOLATED, INCONCLUSIVE, NOT_IMPLEMENTED, CHECKED_NOTHING, SKIPPED, "in part"):
        assert f"{word}:" in report.LEGEND or f"'{word}'" in report.LEGEND, word


def test_violated_requirements_are_explained_with_text_and_anchor():
    lines = report.explained(["SEND-3", "NOPE-1"], report.statements(SPEC))
    assert lines[0].split()[0] == "SEND-3" and "[spec/08-failures.md#SEND-3]" in lines[0]
    assert "not defined by this spec" in lines[1]


def test_the_suite_digest_changes_with_any_file_that_judges(tmp_path):
    """The JSON report's `suite.digest`: equal for the same files, different once a test or a clause changes."""
    import shutil

    suite, spec = tmp_path / "suite", tmp_path / "spec"
    (suite).mkdir()
    (spec / "clauses").mkdir(parents=True)
    (suite / "test_a.py").write_text("def test(): pass\n")
    (spec / "01.md").write_text("**A-1** MUST\n")
    (spec / "clauses" / "01.toml").write_text("[A-1.a]\n")
    first = report.suite_digest(suite, spec)
    assert len(first) == 16 and first == report.suite_digest(suite, spec)
    shutil.copytree(suite, tmp_path / "copy")
    assert report.suite_digest(tmp_path / "copy", spec) == first  # where it lies does not count
    for path, text in ((suite / "test_a.py", "def test(): assert 0\n"), (spec / "clauses" / "01.toml", "[A-1.b]\n")):
        before = path.read_text()
        path.write_text(text)
        assert report.suite_digest(suite, spec) != first, path
        path.write_text(before)
