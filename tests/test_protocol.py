"""The pure protocol module: message encoding and the two transition tables."""

from __future__ import annotations

import itertools
import marshal
import pickle

import pytest

from weightsync import ProtocolError
from weightsync.protocol import (
    RECEIVER_TABLE,
    SENDER_TABLE,
    Ack,
    Entry,
    Init,
    PeerState,
    Ready,
    ReceiverState,
    Receive,
    SlotInfo,
    Stop,
    decode,
    encode,
    message_event,
    step,
)

MESSAGES = [
    Init("1.0", 2, (Entry("w", "float32", (2, 3), "cpu", 0, 24), Entry("s", "int64", (), "cpu", 64, 8)),
         (SlotInfo(0, "cpu", 128), SlotInfo(1, "cpu", 128)), 7, 1),
    Ready(2, 7, "ok", "", True),
    Ready(1, None, "error", "missing 'w'"),
    Receive(8, 0, ()),
    Receive(9, 2, (SlotInfo(2, "cpu", 128),)),
    Stop(),
    Ack(2, 9, "ok"),
    Ack(2, 9, "error", "RuntimeError: boom"),
]


@pytest.mark.parametrize("msg", MESSAGES, ids=lambda m: type(m).__name__)
def test_messages_round_trip(msg):
    """MSG-1: every message and field survives the wire."""
    assert decode(encode(msg)) == msg


@pytest.mark.parametrize(
    "data",
    [b"", b"garbage", marshal.dumps(("Nope", 1)), marshal.dumps(("Ack", 1)), marshal.dumps(42),
     pickle.dumps(Stop())],
)
def test_undecodable_or_unknown_messages_are_protocol_errors(data):
    """MSG-3: unknown types and foreign encodings (pickle included) are refused, never run."""
    with pytest.raises(ProtocolError, match="MSG-3"):
        decode(data)


def test_encode_refuses_non_messages():
    with pytest.raises(ProtocolError, match="MSG-1"):
        encode(object())


def _events(table):
    return sorted({e for _, e in table})


@pytest.mark.parametrize("state,event", list(itertools.product(PeerState, _events(SENDER_TABLE))))
def test_sender_table_illegal_pairs_raise(state, event):
    """SM-S-1..SM-S-6, SM-S-9: legal pairs move as tabled; every other pair is a ProtocolError."""
    if (state, event) in SENDER_TABLE:
        assert step(SENDER_TABLE, state, event) is SENDER_TABLE[(state, event)]
    else:
        with pytest.raises(ProtocolError, match=state.value):
            step(SENDER_TABLE, state, event)


@pytest.mark.parametrize("state,event", list(itertools.product(ReceiverState, _events(RECEIVER_TABLE))))
def test_receiver_table_illegal_pairs_raise(state, event):
    """SM-R-1..SM-R-4, SM-R-7."""
    if (state, event) in RECEIVER_TABLE:
        assert step(RECEIVER_TABLE, state, event) is RECEIVER_TABLE[(state, event)]
    else:
        with pytest.raises(ProtocolError, match=event.replace("(", r"\(").replace(")", r"\)")):
            step(RECEIVER_TABLE, state, event)


def test_table_shapes_that_the_spec_relies_on():
    """SM-S-3, SM-S-5, SM-R-2: Receive/Ack only when live; no new handle for a live receiver."""
    assert {s for (s, e) in SENDER_TABLE if e in ("send Receive", "recv Ack")} == {PeerState.LIVE}
    assert (PeerState.LIVE, "new handle") not in SENDER_TABLE
    assert {s for (s, e) in RECEIVER_TABLE if e == "recv Receive"} == {ReceiverState.LIVE}
    assert all(RECEIVER_TABLE[(s, "close")] is ReceiverState.CLOSED for s in ReceiverState)


def test_message_events():
    assert message_event(Ready(0, 1, "ok")) == "recv Ready(ok)"
    assert message_event(Ack(0, 1, "ok")) == "recv Ack"
    with pytest.raises(ProtocolError):
        message_event("Ack")
