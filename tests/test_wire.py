"""The wire profile (spec/12-wire.md): frames, the codec, its bounds, and the spec's test vectors.

Decoding must be total (SEC-1): every byte string gives a message or a
RemoteProtocolError, never another exception. The test vectors are parsed out of
the spec itself, so the spec and the encoder cannot drift apart (WIRE-9).
"""

from __future__ import annotations

import json
import marshal
import pickle
import re
import struct
from pathlib import Path

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weightsync import RemoteProtocolError, wire
from weightsync.messages import Ack, Entry, Init, Ready, Receive, SlotInfo, Stop

SPEC = Path(__file__).resolve().parent.parent / "spec"
ANY = tuple(cls for cls, _ in wire.SCHEMA.values())

ints = st.integers(0, 2**63 - 1)
text = st.text(max_size=40)
slotinfos = st.builds(SlotInfo, ints, text, ints, st.just(()))
entries = st.builds(Entry, text, text, st.lists(ints, max_size=4).map(tuple), text, ints, ints)
messages = st.one_of(
    st.builds(Init, text, ints, st.lists(entries, max_size=4).map(tuple), st.lists(slotinfos, max_size=4).map(tuple),
              ints, ints, st.sampled_from(["little", "big"]), st.lists(text, max_size=3).map(tuple)),
    st.builds(Ready, ints, st.none() | ints, st.sampled_from(["ok", "error"]), text, st.booleans(), text,
              st.lists(text, max_size=3).map(tuple)),
    st.builds(Receive, ints, ints, st.lists(slotinfos, max_size=3).map(tuple)),
    st.builds(Ack, ints, ints, st.sampled_from(["ok", "error"]), text),
    st.just(Stop()),
)


@given(messages)
def test_every_message_round_trips(msg):
    """MSG-1, WIRE-1, WIRE-3: every message and field survives the wire."""
    frame = wire.frame(msg)
    (n,) = struct.unpack(">I", frame[:4])
    assert n == len(frame) - 4
    assert wire.decode(frame[4:], ANY) == msg


@settings(max_examples=500)
@given(st.binary(max_size=200))
def test_decoding_is_total(data):
    """SEC-1: any bytes decode to a message or raise RemoteProtocolError, nothing else."""
    try:
        wire.decode(data, ANY)
    except RemoteProtocolError:
        pass


def _payloads():
    values = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.floats(), st.text(max_size=5),
                       st.binary(max_size=5), st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3))
    kinds = st.sampled_from(["Init", "Ready", "Receive", "Ack", "Stop", "Nope", 3])
    fields = st.dictionaries(st.sampled_from(["receiver", "version", "status", "detail", "slot", "new_slots",
                                              "holds_slot", "protocol", "manifest", "slots", "byteorder", "x"]),
                             values, max_size=8)
    return st.builds(lambda k, f: msgpack.packb({"type": k, **f}), kinds, fields)


@settings(max_examples=500)
@given(_payloads())
def test_ill_typed_maps_are_violations(data):
    """SEC-1, WIRE-3: well-formed MessagePack with wrong or missing fields is a violation, never a crash."""
    try:
        msg = wire.decode(data, ANY)
    except RemoteProtocolError as e:
        assert e.requirement in ("WIRE-3", "MSG-3")
        return
    assert isinstance(msg, ANY)


@pytest.mark.parametrize("data,rule", [
    (b"", "WIRE-3"),
    (b"garbage", "WIRE-3"),
    (marshal.dumps(("Ack", 1, 2, "ok", "")), "WIRE-3"),  # a 1.0 reference peer's payload
    (pickle.dumps(Stop()), "WIRE-3"),
    (msgpack.packb([1, 2]), "WIRE-3"),
    (msgpack.packb({"type": "Nope"}), "MSG-3"),
    (msgpack.packb({"kind": "Ack"}), "MSG-3"),
    (msgpack.packb({"type": "Ack", "receiver": 0, "version": 1.0, "status": "ok", "detail": ""}), "WIRE-3"),
    (msgpack.packb({"type": "Ack", "receiver": 0, "version": True, "status": "ok", "detail": ""}), "WIRE-3"),
    (msgpack.packb({"type": "Ack", "receiver": 0, "version": [1], "status": "ok", "detail": ""}), "WIRE-3"),
    (msgpack.packb({"type": "Ack", "receiver": 0, "version": -1, "status": "ok", "detail": ""}), "WIRE-3"),
    (msgpack.packb({"type": "Ack", "receiver": 0, "version": 2**63, "status": "ok", "detail": ""}), "WIRE-3"),
    (msgpack.packb({"type": "Ack", "receiver": 0, "version": 1, "status": "ok"}), "WIRE-3"),
    (msgpack.packb({"type": "Ack", "receiver": 0, "version": 1, "status": "ok", "detail": "x" * 5000}), "WIRE-3"),
    (msgpack.packb({"type": "Ack", "receiver": 0, "version": 1, "status": b"ok", "detail": ""}), "WIRE-3"),
    (msgpack.packb({"type": "Receive", "version": 1, "slot": 0, "new_slots": [{"slot": 0, "device": "cpu",
                    "nbytes": 64, "ipc": ["x" * 4097]}]}), "WIRE-3"),  # an ipc str over 4,096 bytes
    (msgpack.packb({"type": "Receive", "version": 1, "slot": 0, "new_slots": [{"slot": 0, "device": "cpu",
                    "nbytes": 64, "ipc": [bytes(4097)]}]}, use_bin_type=True), "WIRE-3"),  # an ipc bin likewise
    (msgpack.packb({"type": "Receive", "version": 1, "slot": 0, "new_slots": [{"slot": 0, "device": "cpu",
                    "nbytes": 64, "ipc": [None] * 17}]}), "WIRE-3"),  # 17 ipc values
    (msgpack.packb({}), "MSG-3"),
    (msgpack.packb({"type": "Stop"}) + b"\x00", "WIRE-3"),  # trailing bytes
    (b"\xdd\x08\x00\x00\x00", "WIRE-3"),  # an array header announcing 2**27 items in 5 bytes
    (b"\x91" * 100_000, "WIRE-3"),  # nesting deeper than any message
    (b"\xa2\xff\xfe", "WIRE-3"),  # invalid UTF-8
])
def test_hostile_payloads_are_named_violations(data, rule):
    """SEC-1, MSG-3, WIRE-3."""
    with pytest.raises(RemoteProtocolError) as info:
        wire.decode(data, ANY)
    assert info.value.requirement == rule


def test_ipc_values_up_to_their_bounds_are_taken():
    """WIRE-3: an ipc list of 16 values, each nil, a boolean, an int64 or a str or bin of 4,096 bytes, is legal."""
    ipc = [None, True, -(2**63), 2**63 - 1, "\u00e9" * 2048, bytes(4096)] + [None] * 10
    data = msgpack.packb({"type": "Receive", "version": 1, "slot": 0, "new_slots": [{"slot": 0, "device": "cuda:0",
                          "nbytes": 64, "ipc": ipc}]}, use_bin_type=True)
    assert wire.decode(data, wire.FROM_SENDER) == Receive(1, 0, (SlotInfo(0, "cuda:0", 64, tuple(ipc)),))


def test_lists_without_a_stated_bound_are_bounded_by_the_frame_only():
    """WIRE-3 bounds a shape and an ipc list, not capabilities: an Init and a Ready with 100 capabilities decode
    (the reference once refused more than 64, stricter than the spec, so it cut off a legal peer)."""
    from conformance.peers import init, ready

    caps = [f"cap{i}" for i in range(100)]
    entry = {"name": "w", "dtype": "float32", "shape": [2], "device": "cpu", "offset": 0, "nbytes": 8}
    got = wire.decode(msgpack.packb({**init(0, [entry], [], 0, 0), "capabilities": caps}), ANY)
    assert len(got.capabilities) == 100
    assert len(wire.decode(msgpack.packb({**ready(0, 0), "capabilities": caps}), ANY).capabilities) == 100


def _schema_bases() -> list[dict]:
    """A legal message of every type, with a record in each list (the suite's negatives change the first)."""
    from conformance.peers import ack, init, ready, slotinfo

    entry = {"name": "w", "dtype": "float32", "shape": [2, 3], "device": "cpu", "offset": 0, "nbytes": 24}
    return [init(0, [entry], [slotinfo(0, 64)], 0, 0), ready(0, 0), ack(0, 1), {"type": "Stop"},
            {"type": "Heartbeat"}, {"type": "Receive", "version": 1, "slot": 1, "new_slots": [slotinfo(1, 64)]},
            {"type": "Hello", "protocol": "1.1", "nonce": bytes(32)},
            {"type": "Join", "receiver": 0, "nonce": bytes(32), "proof": bytes(32)},
            {"type": "Welcome", "proof": bytes(32)}, {"type": "Refuse", "detail": "refused"}]


@pytest.mark.parametrize("base", _schema_bases(), ids=lambda m: m["type"])
def test_every_negative_of_the_schema_is_a_violation(base):
    """WIRE-3: each frame the conformance suite's schema makes from a legal message by breaking one rule (a
    field missing, of another type, over its bound) is a violation; the legal message itself decodes."""
    from conformance.wire_schema import negatives

    assert type(wire.decode(msgpack.packb(base, use_bin_type=True), ANY)).__name__ == base["type"]
    taken = []
    for name, payload, _ in negatives(base):
        try:
            wire.decode(msgpack.packb(payload, use_bin_type=True), ANY)
        except RemoteProtocolError as e:
            assert e.requirement in ("WIRE-3", "MSG-3"), f"{name}: {e}"
        else:
            taken.append(name)
    assert not taken, f"decoded as legal: {taken}"


def test_unknown_fields_are_ignored():
    """WIRE-3, WIRE-6: a later minor version may add fields."""
    data = msgpack.packb({"type": "Ack", "receiver": 0, "version": 3, "status": "ok", "detail": "", "new": [1, 2]})
    assert wire.decode(data, ANY) == Ack(0, 3, "ok", "")


def test_messages_of_the_other_direction_are_violations():
    """MSG-3: an Ack at a receiver, an Init at a sender."""
    with pytest.raises(RemoteProtocolError, match="MSG-3"):
        wire.decode(wire.payload(Ack(0, 1, "ok")), wire.FROM_SENDER)
    with pytest.raises(RemoteProtocolError, match="MSG-3"):
        wire.decode(wire.payload(Stop()), wire.FROM_RECEIVER)


def test_lenient_decoding_of_non_canonical_encodings():
    """WIRE-5: another key order, a longer integer form, absent optional fields."""
    obj = {"detail": "", "status": "ok", "version": 7, "receiver": 1, "type": "Ack"}
    assert wire.decode(msgpack.packb(obj), ANY) == Ack(1, 7, "ok", "")
    longer = b"\x85\xa4type\xa3Ack\xa8receiver\xcf" + (1).to_bytes(8, "big") + b"\xa7version\xcd\x00\x07" \
        b"\xa6status\xa2ok\xa6detail\xa0"
    assert wire.decode(longer, ANY) == Ack(1, 7, "ok", "")
    bare = {"type": "Receive", "version": 2, "slot": 0, "new_slots": [{"slot": 3, "device": "cpu", "nbytes": 64}]}
    assert wire.decode(msgpack.packb(bare), ANY) == Receive(2, 0, (SlotInfo(3, "cpu", 64),))


def test_frame_reader_bounds_and_pieces():
    """WIRE-1, WIRE-2: frames arrive in pieces; a length over the bound fails before its payload is read."""
    r = wire.FrameReader(100)
    frame = wire.frame(Ack(0, 1, "ok"))
    for b in frame[:-1]:
        r.feed(bytes([b]))
        assert r.next() is None and r.partial
    r.feed(frame[-1:] + frame)
    assert r.next() == frame[4:] and r.next() == frame[4:] and r.next() is None and not r.partial
    r.feed(struct.pack(">I", 101))
    with pytest.raises(RemoteProtocolError, match="WIRE-2"):
        r.next()
    r = wire.FrameReader(100)
    r.feed(b"\x00\x00\x00\x00")
    with pytest.raises(RemoteProtocolError, match="WIRE-2"):
        r.next()


# ---- the spec's test vectors (WIRE-9) ----

VECTOR = re.compile(r"^#### (?P<name>.+?)\n\nPayload as JSON: `(?P<json>[^`]+)`\n\nFrame, (?P<n>\d+) bytes:\n\n"
                    r"```text\n(?P<hex>[0-9a-f \n]+?)```", re.M)


def _bin(obj):
    """The spec writes a byte string as {"bin": HEX}."""
    return bytes.fromhex(obj["bin"]) if set(obj) == {"bin"} else obj


def spec_vectors():
    text = (SPEC / "12-wire.md").read_text() + (SPEC / "14-rendezvous.md").read_text()
    found = [(m["name"], json.loads(m["json"], object_hook=_bin), bytes.fromhex(m["hex"].replace(" ", "").replace("\n", "")),
              int(m["n"])) for m in VECTOR.finditer(text)]
    assert len(found) >= 13, "spec/12-wire.md and 14-rendezvous.md lost test vectors"
    return found


@pytest.mark.parametrize("name,payload,frame,n", spec_vectors(), ids=lambda v: v if isinstance(v, str) else "")
def test_spec_vectors(name, payload, frame, n):
    """WIRE-9, WIRE-5: the spec's bytes decode to its payload, and encoding gives back the same bytes."""
    assert len(frame) == n
    msg = wire.decode(frame[4:], ANY)
    assert msgpack.unpackb(frame[4:]) == payload
    assert wire.frame(msg) == frame, f"{name}: the encoder is not canonical"
    assert type(msg).__name__ == payload["type"]


def test_every_message_kind_has_a_vector():
    """WIRE-9: one vector at least for each message."""
    kinds = {payload["type"] for _, payload, _, _ in spec_vectors()}
    assert kinds == set(wire.SCHEMA)


def test_unknown_fields_may_hold_any_messagepack_value():
    """WIRE-3: an ignored key's value is not checked, whatever it holds; known fields' maps keep string keys."""
    from conformance.peers import ODD_VALUES, with_odd_fields

    ack = {"type": "Ack", "receiver": 0, "version": 3, "status": "ok", "detail": ""}
    assert wire.decode(with_odd_fields(ack), wire.FROM_RECEIVER) == Ack(0, 3, "ok", "")
    for odd in ODD_VALUES:  # each alone, as the whole value of the one unknown field
        payload = bytes([0x86]) + msgpack.packb(ack)[1:] + msgpack.packb("x") + odd
        assert wire.decode(payload, wire.FROM_RECEIVER) == Ack(0, 3, "ok", "")


@pytest.mark.parametrize("payload,why", [
    (bytes([0x82]) + msgpack.packb({"type": "Stop"})[1:] + b"\x01\x02", "a payload's map keys must be strings"),
    (msgpack.packb({"type": "Receive", "version": 1, "slot": 0, "new_slots": [{1: 2}]}), "map keys must be strings"),
    (b"\x81\x81\x01\x02\x03", "a payload must be a map"),
])
def test_known_maps_keep_string_keys(payload, why):
    """WIRE-3: the payload and its records are maps whose keys are strings; only ignored values are free."""
    with pytest.raises(RemoteProtocolError, match=why):
        wire.decode(payload, wire.FROM_SENDER)
