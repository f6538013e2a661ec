"""The transition tables of spec/04-state-machines.md and protocol.py say the same thing.

The spec's tables are parsed from the markdown (state | event | next state | notes),
the module's from SENDER_TABLE and RECEIVER_TABLE, and each side must hold every row
of the other: a row added, dropped or changed on one side only fails here. The
mermaid diagrams and the state lists beside the tables are checked the same way.
Which machine a section describes is read from the requirement IDs it defines
(SM-S-* or SM-R-*), so nothing of either table is copied into this file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from weightsync import join, protocol

SPEC = Path(__file__).resolve().parent.parent / "spec" / "04-state-machines.md"
MACHINES = {"SM-S": protocol.SENDER_TABLE, "SM-R": protocol.RECEIVER_TABLE}
STATES = {"SM-S": protocol.PeerState, "SM-R": protocol.ReceiverState}

Row = tuple[str, str, str]


def _norm(text: str) -> str:
    """Markup and spacing removed, lower case: `**Live**` and ` live ` are one name."""
    return " ".join(re.sub(r"[`*_]", "", text).split()).lower()


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _sections() -> dict[str, str]:
    """Machine prefix (SM-S, SM-R) -> the text of the `##` section that defines its IDs."""
    out = {}
    for section in re.split(r"^## ", SPEC.read_text(), flags=re.M)[1:]:
        prefixes = set(re.findall(r"\*\*(SM-[A-Z])-\d+\*\*", section))
        if len(prefixes) == 1:
            out[prefixes.pop()] = section
    return out


def spec_table(section: str) -> list[Row]:
    """(state, event, next state) of every row of the section's transition table."""
    lines = section.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("|") and
                [_norm(c) for c in _cells(line)][:3] == ["state", "event", "next state"])
    rows = []
    for line in lines[head + 2:]:
        if not line.startswith("|"):
            break
        state, event, nxt = _cells(line)[:3]
        rows.append((_norm(state), _norm(event), _norm(nxt)))
    return rows


def spec_diagram(section: str) -> list[Row]:
    """(state, event, next state) of every arrow of the section's mermaid state diagram."""
    block = re.search(r"```mermaid\n(.*?)```", section, flags=re.S).group(1)
    arrows = re.findall(r"^\s*(\w+)\s*-->\s*(\w+)\s*:\s*(.+?)\s*$", block, flags=re.M)
    return [(_norm(a), _norm(event), _norm(b)) for a, b, event in arrows]


def spec_states(section: str) -> set[str]:
    """The states named in bold in the section's "States:" paragraph."""
    para = re.search(r"^States:(.*?)(?:\n\n)", section, flags=re.S | re.M).group(1)
    return {_norm(s) for s in re.findall(r"\*\*(.+?)\*\*", para)}


def code_table(table: dict) -> list[Row]:
    return [(_norm(state.value), _norm(event), _norm(nxt.value)) for (state, event), nxt in table.items()]


def _differences(spec: list[Row], code: list[Row]) -> str:
    only_spec = sorted(set(spec) - set(code))
    only_code = sorted(set(code) - set(spec))
    return f"only in spec/: {only_spec}; only in protocol.py: {only_code}"


@pytest.fixture(scope="module")
def sections():
    found = _sections()
    assert set(found) == set(MACHINES), f"expected one section per machine in {SPEC.name}, found {sorted(found)}"
    return found


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_spec_table_equals_protocol_table(sections, machine):
    """SM-S-*, SM-R-*: every spec row is in protocol.py and every protocol.py transition is in the spec."""
    spec = spec_table(sections[machine])
    code = code_table(MACHINES[machine])
    assert len(spec) == len(set(spec)), f"{machine}: a row appears twice in the spec's table"
    assert set(spec) == set(code), f"{machine}: {_differences(spec, code)}"


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_spec_rows_are_in_protocol_order(sections, machine):
    """The two tables read row for row alike, as spec/04 promises a reviewer."""
    assert spec_table(sections[machine]) == code_table(MACHINES[machine])


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_spec_diagram_equals_protocol_table(sections, machine):
    """The state diagram draws exactly the table's transitions (the unlabelled start arrow aside)."""
    arrows = spec_diagram(sections[machine])
    code = code_table(MACHINES[machine])
    assert set(arrows) == set(code), f"{machine} diagram: {_differences(arrows, code)}"


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_spec_states_equal_protocol_states(sections, machine):
    """The states the spec lists are the enum's, and every state appears in the table."""
    named = spec_states(sections[machine])
    enum = {_norm(s.value) for s in STATES[machine]}
    assert named == enum, f"{machine}: only in spec/: {sorted(named - enum)}; only in protocol.py: {sorted(enum - named)}"
    used = {s for row in code_table(MACHINES[machine]) for s in (row[0], row[2])}
    assert used == enum, f"{machine}: states in no transition: {sorted(enum - used)}"


def test_parser_sees_a_changed_row(sections):
    """The comparison is not vacuous: dropping or altering one spec row is caught."""
    spec = spec_table(sections["SM-R"])
    code = code_table(MACHINES["SM-R"])
    assert set(spec[1:]) != set(code)
    altered = [(spec[0][0], spec[0][1], "closed"), *spec[1:]]
    assert set(altered) != set(code)


JOIN_SPEC = SPEC.parent / "14-rendezvous.md"


def test_join_table_equals_protocol_join_table():
    """RDV-3..RDV-7: Table 14-1 and join.JOIN_TABLE hold the same rows in the same order, and the
    join machine takes a listener's events only at the listener and a joiner's only at the joiner."""
    spec = spec_table(JOIN_SPEC.read_text())
    code = code_table(join.JOIN_TABLE)
    assert spec == code, _differences(spec, code)
    sides = {}
    lines = JOIN_SPEC.read_text().splitlines()
    for line in lines:
        cells = _cells(line) if line.startswith("|") else []
        if len(cells) >= 4 and (_norm(cells[0]), _norm(cells[1]), _norm(cells[2])) in set(spec):
            sides[(_norm(cells[0]), _norm(cells[1]))] = _norm(cells[3])
    for (state, event), nxt in join.JOIN_TABLE.items():
        side = sides[(_norm(state.value), _norm(event))]
        for listener in (True, False):
            m = join.JoinMachine(listener)
            m.state = state
            if side == "both" or (side == "listener") == listener:
                assert m._step(event) is nxt
            else:
                with pytest.raises(protocol.RemoteProtocolError):
                    m._step(event)
                assert m.state is join.JoinState.ENDED


# ---- Table 12-1, the wire's fields, and the bounds of WIRE-2 and WIRE-3 ----

WIRE_SPEC = SPEC.parent / "12-wire.md"


def wire_table() -> dict[str, list[tuple[str, bool, str, str]]]:
    """Table 12-1: message or record -> [(field, optional, type words, what its parentheses say)]."""
    lines = WIRE_SPEC.read_text().split("Table 12-1", 1)[1].splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| `type`"))
    rows = {}
    for line in lines[head + 2:]:
        if not line.startswith("|"):
            break
        name, cell = _cells(line)[:2]
        fields = []
        for part in re.split(r",\s*(?=`)", cell) if cell.startswith("`") else []:
            m = re.fullmatch(r"`(\w+)`(\?)?\s+([^(]*?)\s*(?:\(((?:[^()]|\([^()]*\))*)\).*)?", part.strip())
            assert m, f"Table 12-1, {name}: cannot read {part!r}"
            fields.append((m[1], bool(m[2]), m[3], m[4] or ""))
        rows[name.strip('`"')] = fields
    return rows


def _spec_words(t) -> str:
    """A wire_schema.Type in the words of Table 12-1."""
    if t.kind == "array":
        item = "" if t.item.kind == "ipc" else f" of {t.item.record or _spec_words(t.item)}"
        return "array" + item
    base = "map" if t.kind == "record" else t.kind
    return base + (" or nil" if t.nullable else "")


def test_wire_schema_equals_table_12_1():
    """WIRE-3, WIRE-5: the conformance suite's schema (conformance/wire_schema.py) holds Table 12-1 row for
    row: every message and record, its fields in order, each one's type, whether it may be absent and then
    what it is, a bin's length; and the reference's codec (wire.SCHEMA) has the same fields in the same order."""
    from conformance import wire_schema as W
    from weightsync import wire

    table = wire_table()
    assert set(table) == set(W.MESSAGES) | set(W.RECORDS), f"Table 12-1 rows {sorted(table)}"
    defaults = {"`[]`": [], "nil": None}
    for name, spec in table.items():
        mine = W.fields(name)
        assert [f.name for f in mine] == [f for f, *_ in spec], f"{name}: fields or their order differ"
        for f, (field, optional, words, note) in zip(mine, spec):
            assert (_spec_words(f.type), f.optional) == (words, optional), f"{name}.{field}: {words!r}{'?' * optional}"
            if optional:
                assert f.default == defaults[note.split(";")[0]], f"{name}.{field}: absent it is {note!r}"
            if f.type.kind == "bin":
                assert note == f"{f.type.size} bytes", f"{name}.{field}: a bin of {note!r}"
    for name, (_, fields) in wire.SCHEMA.items():
        assert [(f[0], len(f) == 3) for f in fields] == [(f.name, f.optional) for f in W.MESSAGES[name]], name


def test_wire_schema_bounds_are_the_specs():
    """WIRE-2, WIRE-3: the frame bounds and the value bounds the suite's negatives exceed by one are the spec's."""
    from conformance import wire_schema as W

    text = " ".join(WIRE_SPEC.read_text().split())
    for phrase in (f"MUST NOT exceed {W.MAX_TO_SENDER:,} bytes of payload", f"MUST NOT exceed {W.MAX_TO_RECEIVER:,} bytes",
                   f"Strings hold at most {W.MAX_STR:,} bytes of UTF-8", f"a shape at most {W.MAX_DIMS} dimensions",
                   f"an `ipc` list at most {W.MAX_IPC} values", f"a str or bin of at most {W.MAX_IPC_BYTES:,} bytes",
                   "an integer field holds a MessagePack integer in [0, 2⁶³)"):
        assert phrase in text, f"spec/12-wire.md no longer says {phrase!r}"
    assert W.INT_END == 2**63
