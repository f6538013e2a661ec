"""The run's report, made to be read without the docs: a legend, each requirement with its text and anchor.

Pure: it is given the outcome of every test (gathered by outcomes.Outcomes) and the spec's folder, and returns
the requirement table and the lines the terminal shows. The JSON report's fields are documented in
docs/conformance.md ("The JSON report"); `SCHEMA` names its version.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from .verdict import CHECKED_NOTHING, INCONCLUSIVE, NOT_IMPLEMENTED, PASSED, SKIPPED, VIOLATED, XFAIL, XPASS

#: The JSON report's layout; a field's meaning never changes within one value.
SCHEMA = "weightsync-conformance-report/2"
SPEC_ID = re.compile(r"\*\*([A-Z]+(?:-[A-Z])?-\d+)\*\*")
#: What each outcome says about the implementation, in the words the report uses everywhere.
LEGEND = (
    f"{PASSED}: every check held · {VIOLATED}: the implementation broke the requirement (exit 1) · "
    f"{INCONCLUSIVE}: the suite could not decide, nothing against the implementation (exit 6) · "
    f"{NOT_IMPLEMENTED}: needs a capability not declared, not run · {CHECKED_NOTHING}: it ran, but what it checks "
    f"did not occur this time · {SKIPPED}: this machine cannot run it (e.g. no "
    "CUDA device) · 'in part': some of the requirement's tests were not run or checked nothing"
)
RANK = {PASSED: 0, XPASS: 0, SKIPPED: 1, NOT_IMPLEMENTED: 2, CHECKED_NOTHING: 2, INCONCLUSIVE: 3, XFAIL: 4, VIOLATED: 5}
#: The order in which a requirement's status is decided: a passing test decides it though another was inconclusive.
DECIDES = (VIOLATED, XFAIL, PASSED, XPASS, INCONCLUSIVE, CHECKED_NOTHING, NOT_IMPLEMENTED, SKIPPED)


def suite_digest(suite_dir: Path, spec_dir: Path) -> str:
    """A digest of what judged a run: the suite's Python files and the spec's text (requirements and clauses).
    Two reports with one digest came from the same suite, so their verdicts may be compared test by test."""
    import hashlib

    h = hashlib.sha256()
    for folder, patterns in ((suite_dir, ("*.py",)), (spec_dir, ("*.md", "clauses/*.toml"))):
        for pattern in patterns:
            for path in sorted(folder.glob(pattern)):
                h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def spec_version(spec_dir: Path) -> str:
    """The protocol version the spec states in its title ("# weightsync protocol 1.1")."""
    m = re.search(r"^# weightsync protocol (\d+\.\d+)", (spec_dir / "README.md").read_text(), re.M)
    if not m:
        raise RuntimeError(f"{spec_dir / 'README.md'} lost its title line '# weightsync protocol X.Y'")
    return m.group(1)


def id_key(i: str):
    head, _, num = i.rpartition("-")
    return (head, int(num) if num.isdigit() else 0)


def spec_ids(spec_dir: Path) -> list[str]:
    """Every requirement ID the spec defines (a bold `**ID**` in one of its pages), by section and number."""
    return sorted({m for p in spec_dir.glob("*.md") for m in SPEC_ID.findall(p.read_text())}, key=id_key)


def statements(spec_dir: Path) -> dict[str, dict[str, str]]:
    """ID -> its opening as one plain line, and its anchor (`05-versions.md#ACK-3`)."""
    out: dict[str, dict[str, str]] = {}
    for path in sorted(spec_dir.glob("*.md")):
        text = path.read_text()
        for m in SPEC_ID.finditer(text):
            end = text.find("\n\n", m.end())
            out.setdefault(m.group(1), {"text": one_line(text[m.end(): end if end > 0 else None]),
                                        "spec": f"{path.name}#{m.group(1)}"})
    return out


def one_line(statement: str, width: int = 140) -> str:
    """The first sentences (60 characters at least) of a statement in plain text: no links, code marks or emphasis, at most `width` long."""
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", statement)
    s = re.sub(r"[`*]", "", s)
    s = re.sub(r"\s+", " ", s).strip().lstrip("—-: ").strip()
    for m in re.finditer(r"(?<=[a-z0-9)\]])\.(?=\s+[A-Z(])", s):  # whole sentences, at least 60 characters
        if m.start() >= 60:
            s = s[: m.start() + 1]
            break
    return s if len(s) <= width else s[: width - 1].rstrip() + "…"


def table(tests: dict[str, dict], spec_ids: list[str], unrun_note: str | None) -> dict[str, dict]:
    """Requirement -> its status and the tests behind it; only the blamed IDs of a violation count as violated.

    `unrun_note` (a one-role subject) marks every requirement no test named as not implemented, with that reason.
    A row's status is one of the outcomes; `partial` says some of its tests were not run (not implemented or
    skipped) or checked nothing, so that a row is never called passed without saying so."""
    per_id: dict[str, dict[str, list[str]]] = defaultdict(lambda: {k: [] for k in RANK})
    for nodeid, t in tests.items():
        if t["outcome"] in (VIOLATED, XFAIL):
            for i in t["blamed"]:
                per_id[i][t["outcome"]].append(nodeid)
            continue  # the test's other IDs were neither shown to hold nor to fail
        for i in t["ids"]:
            per_id[i][t["outcome"]].append(nodeid)
    if unrun_note:
        for i in spec_ids:
            if i not in per_id:
                per_id[i][NOT_IMPLEMENTED].append(unrun_note)
    rows = {}
    for i in sorted(per_id, key=id_key):
        d = per_id[i]
        status = next((s for s in DECIDES if d[s]), SKIPPED)
        partial = status in (PASSED, XPASS, VIOLATED, XFAIL, INCONCLUSIVE) and bool(d[NOT_IMPLEMENTED] or d[SKIPPED]
                                                                                 or d[CHECKED_NOTHING])
        rows[i] = {"status": status, "partial": partial, **{k: len(v) for k, v in d.items()},
                   "violated_tests": d[VIOLATED], "inconclusive_tests": d[INCONCLUSIVE]}
    return rows


def shown_status(row: dict) -> str:
    return row["status"] + (" in part" if row["partial"] else "")


def table_lines(rows: dict[str, dict]) -> list[str]:
    lines = [f"{'requirement':<12} {'status':<22} passed violated inconclusive not-impl checked-nothing skipped"]
    for i, r in rows.items():
        lines.append(f"{i:<12} {shown_status(r):<22} {r[PASSED]:>6} {r[VIOLATED]:>8} {r[INCONCLUSIVE]:>12} "
                     f"{r[NOT_IMPLEMENTED]:>8} {r[CHECKED_NOTHING]:>15} {r[SKIPPED]:>7}")
    return lines


def explained(ids: list[str], texts: dict[str, dict[str, str]]) -> list[str]:
    """One line per requirement: its ID, its first sentence, and where the spec says it in full."""
    out = []
    for i in ids:
        t = texts.get(i)
        out.append(f"  {i:<10} {t['text']}  [spec/{t['spec']}]" if t else f"  {i:<10} (not defined by this spec)")
    return out


def annotate(rows: dict[str, dict], texts: dict[str, dict[str, str]]) -> dict[str, dict]:
    """The JSON rows: each with its statement's first sentence and anchor."""
    return {i: {**r, **texts.get(i, {"text": None, "spec": None})} for i, r in rows.items()}
