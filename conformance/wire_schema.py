"""Table 12-1 and the bounds of WIRE-2 and WIRE-3 as data, and the negatives generated from them.

The suite's one copy of the wire schema, written from spec/12-wire.md alone (it imports
nothing of any implementation); tests/test_spec_tables.py checks it against the spec's
table row for row. `negatives` turns a legal message into every frame that breaks one
rule of WIRE-3 in one place: a required field missing, a value of another type, a bound
exceeded by one, in the message and in its records alike. A hand-picked list misses the
field nobody thought of (an Init whose `byteorder` is missing, filled in with a default);
the schema does not.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

#: WIRE-2: the largest payload a receiver may send, and a sender may send.
MAX_TO_SENDER = 64 * 1024
MAX_TO_RECEIVER = 64 * 1024 * 1024
#: WIRE-3: the longest string in UTF-8 bytes, the longest shape, the longest `ipc` list and one of its
#: str or bin values; integer fields hold [0, INT_END), an `ipc` integer is an int64.
MAX_STR = 4096
MAX_DIMS = 64
MAX_IPC = 16
MAX_IPC_BYTES = 4096
INT_END = 2**63
#: The clauses of WIRE-3 a negative makes true: a required field missing, a value of another type, a bound exceeded.
MISSING, WRONG_TYPE, OVER_BOUND = "WIRE-3.b", "WIRE-3.c", "WIRE-3.d"


@dataclass(frozen=True)
class Type:
    """A value type of Table 12-1: `kind` is int, str, bool, bin, array, record or ipc (one `ipc` value)."""

    kind: str
    nullable: bool = False  # `int or nil`, `map or nil`
    item: Type | None = None  # an array's items
    size: int | None = None  # a bin's exact length; an array's most items (None: bounded by the frame)
    record: str | None = None  # a record's name in RECORDS

    def __str__(self) -> str:
        base = {"array": f"array of {self.item}", "record": str(self.record), "bin": f"bin ({self.size} bytes)"}
        return base.get(self.kind, self.kind) + (" or nil" if self.nullable else "")


@dataclass(frozen=True)
class Field:
    name: str
    type: Type
    optional: bool = False  # `?` in Table 12-1: may be absent, and then has `default`
    default: object = None


INT, STR, BOOL, NONCE = Type("int"), Type("str"), Type("bool"), Type("bin", size=32)
STRS = Type("array", item=STR)


def _record(name: str, nullable: bool = False) -> Type:
    return Type("record", nullable=nullable, record=name)


#: The records, each a map with string keys (Table 12-1: Entry, SlotInfo, data_plane).
RECORDS: dict[str, tuple[Field, ...]] = {
    "Entry": (Field("name", STR), Field("dtype", STR), Field("shape", Type("array", item=INT, size=MAX_DIMS)),
              Field("device", STR), Field("offset", INT), Field("nbytes", INT)),
    "SlotInfo": (Field("slot", INT), Field("device", STR), Field("nbytes", INT),
                 Field("ipc", Type("array", item=Type("ipc"), size=MAX_IPC), optional=True, default=[])),
    "data_plane": (Field("backend", STR), Field("store", STR), Field("prefix", STR), Field("nbytes", INT),
                   Field("timeout_ms", INT), Field("lease_ms", INT)),
}

#: Every message and its fields in canonical order (Table 12-1, WIRE-5); `type` comes first and is not listed.
MESSAGES: dict[str, tuple[Field, ...]] = {
    "Init": (Field("protocol", STR), Field("receiver", INT), Field("manifest", Type("array", item=_record("Entry"))),
             Field("slots", Type("array", item=_record("SlotInfo"))), Field("version", INT), Field("slot", INT),
             Field("byteorder", STR), Field("capabilities", STRS, optional=True, default=[]),
             Field("data_plane", _record("data_plane", nullable=True), optional=True, default=None)),
    "Ready": (Field("receiver", INT), Field("version", Type("int", nullable=True)), Field("status", STR),
              Field("detail", STR), Field("holds_slot", BOOL), Field("protocol", STR),
              Field("capabilities", STRS, optional=True, default=[])),
    "Receive": (Field("version", INT), Field("slot", INT), Field("new_slots", Type("array", item=_record("SlotInfo")))),
    "Ack": (Field("receiver", INT), Field("version", INT), Field("status", STR), Field("detail", STR)),
    "Stop": (),
    "Heartbeat": (),
    "Hello": (Field("protocol", STR), Field("nonce", NONCE)),
    "Join": (Field("receiver", INT), Field("nonce", NONCE), Field("proof", NONCE)),
    "Welcome": (Field("proof", NONCE),),
    "Refuse": (Field("detail", STR),),
}

#: Who sends what (WIRE-3, MSG-1): on a channel, and before Init on a joining connection (RDV-3).
TO_RECEIVER = ("Init", "Receive", "Stop", "Heartbeat")
TO_SENDER = ("Ready", "Ack", "Heartbeat")
JOIN_TO_RECEIVER = ("Hello", "Welcome", "Refuse")
JOIN_TO_SENDER = ("Join",)

#: A legal record for a field whose legal value holds none (data_plane is nil on a Unix channel); an Init that
#: names it is a network Init, but a frame whose record breaks WIRE-3 is a violation before anything else.
EXAMPLES = {"data_plane": {"backend": "gloo", "store": "127.0.0.1:1", "prefix": "00" * 16, "nbytes": 64,
                           "timeout_ms": 1000, "lease_ms": 5000},
            "str": "x-unknown", "ipc": None}
#: One string over the bound in UTF-8 bytes though far under it in characters: 2,048 two-byte characters
#: and one more byte, so a decoder that counts characters lets it through.
LONG_STR = "\u00e9" * (MAX_STR // 2) + "x"

Case = tuple[str, dict, str]  # (name, payload, the clause of WIRE-3 it makes true)


def fields(kind: str) -> tuple[Field, ...]:
    """The fields of a message or a record, by name."""
    return MESSAGES[kind] if kind in MESSAGES else RECORDS[kind]


def canonical_keys(kind: str) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind))


def _wrong(t: Type, value) -> list[tuple[str, object]]:
    """Values of another type than `t` (WIRE-3: strict types), each with what it is; `value` is a legal one.

    Each is what a lenient decoder takes: a float or a boolean for an integer (Python's int(), isinstance),
    nil for a field that is not nullable (nil read as absent, then a default), a bin for a str, a map for an
    array, an array for a record (the fields by position, as a 1.0 peer wrote them)."""
    nil = [] if t.nullable else [("nil", None)]
    if t.kind == "int":
        return [("a float", float(value if isinstance(value, int) else 1)), ("a boolean", True)] + nil
    if t.kind == "str":
        return [("a bin", (value if isinstance(value, str) else "x").encode())] + nil
    if t.kind == "bool":
        return [("an integer", int(bool(value)))] + nil
    if t.kind == "bin":
        return [("a str", "x" * t.size)] + nil
    if t.kind == "array":
        return [("a map", {"0": value[0]} if value else {})] + nil
    if t.kind == "record":
        return [("an array", list((value or EXAMPLES[t.record]).values()))] + nil
    if t.kind == "ipc":
        return [("a float", 1.5), ("a map", {"k": 1})]
    raise ValueError(t.kind)


def _over(t: Type, value) -> list[tuple[str, object]]:
    """Values one past a bound of `t` (WIRE-3)."""
    if t.kind == "int":
        return [("2**63", INT_END), ("-1", -1)]
    if t.kind == "str":
        return [(f"{len(LONG_STR.encode())} UTF-8 bytes ({len(LONG_STR)} characters)", LONG_STR)]
    if t.kind == "bin":
        return [(f"a bin of {t.size + 1} bytes", bytes(t.size + 1))]
    if t.kind == "ipc":
        return [("an int64 of 2**63", INT_END),  # (below -2**63 MessagePack has no integer)
                (f"a str of {len(LONG_STR.encode())} UTF-8 bytes", LONG_STR),
                (f"a bin of {MAX_IPC_BYTES + 1} bytes", bytes(MAX_IPC_BYTES + 1))]
    return []


def _value_cases(where: str, t: Type, value) -> Iterator[tuple[str, object, str]]:
    """(what, bad value, clause) for one field's value: its own type and bounds, then its items' or fields'."""
    for what, bad in _wrong(t, value):
        yield f"{where} is {what}", bad, WRONG_TYPE
    for what, bad in _over(t, value):
        yield f"{where} is {what}", bad, OVER_BOUND
    if t.kind == "array":
        items = list(value) if value else []
        sample = items[0] if items else EXAMPLES.get(t.item.record or t.item.kind)
        if t.size is not None:
            yield f"{where} has {t.size + 1} items", (items + [sample] * (t.size + 1))[: t.size + 1], OVER_BOUND
        label = f"{where}.{t.item.record}" if t.item.kind == "record" else f"{where} item"
        for what, bad, clause in _value_cases(label, t.item, sample):
            yield what, [bad, *items[1:]], clause
    elif t.kind == "record" and (value is not None or t.nullable):
        yield from _record_cases(where, t.record, value if value is not None else EXAMPLES[t.record])


def _record_cases(where: str, record: str, value: dict) -> Iterator[tuple[str, object, str]]:
    for f in RECORDS[record]:
        if not f.optional:
            yield f"{where}.{f.name} is missing", {k: v for k, v in value.items() if k != f.name}, MISSING
        for what, bad, clause in _value_cases(f"{where}.{f.name}", f.type, value.get(f.name, f.default)):
            yield what, {**value, f.name: bad}, clause


def negatives(msg: dict) -> Iterator[Case]:
    """Every payload that breaks WIRE-3 in one place, made from the legal message `msg`.

    Each required field missing, each field of another type, each bound exceeded by one, down
    through records and lists (the first item of a list is the one changed). A message without
    fields gets its `type` as a bin instead of a str. Names are unique and read as the case."""
    kind = msg["type"]
    if not MESSAGES[kind]:
        yield f"{kind}: type is a bin", {"type": kind.encode()}, WRONG_TYPE
    for f in MESSAGES[kind]:
        if not f.optional:
            yield f"{kind}.{f.name} is missing", {k: v for k, v in msg.items() if k != f.name}, MISSING
        for what, bad, clause in _value_cases(f"{kind}.{f.name}", f.type, msg.get(f.name, f.default)):
            yield what, {**msg, f.name: bad}, clause


def negative(msg: dict, name: str) -> tuple[dict, str]:
    """The negative called `name` made from the legal message `msg`: (payload, clause). Names do not depend on
    the values, so a case listed at collection is made again from a message known only at run time."""
    for case, payload, clause in negatives(msg):
        if case == name:
            return payload, clause
    raise KeyError(f"{msg['type']} has no negative {name!r}")
