"""Messages and state machines of the protocol, with no torch and no I/O.

This module mirrors spec/03-messages.md and spec/04-state-machines.md: the
tables below and the tables there should read alike (SM-S-*, SM-R-*). The
Sender and Receiver drive these machines over a transport.
"""

from __future__ import annotations

import marshal
from dataclasses import dataclass
from enum import Enum

from .errors import ProtocolError

PROTOCOL_VERSION = "1.0"
OK = "ok"
ERROR = "error"


@dataclass(frozen=True)
class Entry:
    """One named array of the manifest and where it sits inside a slot (LAYOUT-1)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    device: str
    offset: int
    nbytes: int


@dataclass(frozen=True)
class SlotInfo:
    """A buffer slot; a CPU slot's handle (a file descriptor) travels beside the message."""

    slot: int
    device: str
    nbytes: int
    ipc: tuple = ()  # a CUDA slot's IPC handle and event handle; empty for a CPU slot


@dataclass(frozen=True)
class Init:
    protocol: str
    receiver: int
    manifest: tuple[Entry, ...]
    slots: tuple[SlotInfo, ...]
    version: int
    slot: int


@dataclass(frozen=True)
class Ready:
    receiver: int
    version: int | None
    status: str
    detail: str = ""
    holds_slot: bool = False


@dataclass(frozen=True)
class Receive:
    version: int
    slot: int
    new_slots: tuple[SlotInfo, ...] = ()


@dataclass(frozen=True)
class Stop:
    pass


@dataclass(frozen=True)
class Ack:
    receiver: int
    version: int
    status: str
    detail: str = ""


MESSAGES = (Init, Ready, Receive, Stop, Ack)


def encode(msg: object) -> bytes:
    """A message as bytes: a marshal'd tuple of plain values, never code (MSG-3)."""
    t = type(msg)
    if t is Receive:
        wire = ("Receive", msg.version, msg.slot, tuple(_slot_wire(s) for s in msg.new_slots))
    elif t is Ack:
        wire = ("Ack", msg.receiver, msg.version, msg.status, msg.detail)
    elif t is Ready:
        wire = ("Ready", msg.receiver, msg.version, msg.status, msg.detail, msg.holds_slot)
    elif t is Stop:
        wire = ("Stop",)
    elif t is Init:
        manifest = tuple((e.name, e.dtype, e.shape, e.device, e.offset, e.nbytes) for e in msg.manifest)
        slots = tuple(_slot_wire(s) for s in msg.slots)
        wire = ("Init", msg.protocol, msg.receiver, manifest, slots, msg.version, msg.slot)
    else:
        raise ProtocolError(f"not a protocol message: {msg!r} (MSG-1)")
    return marshal.dumps(wire)


def _slot_wire(s: SlotInfo) -> tuple:
    return (s.slot, s.device, s.nbytes, s.ipc)


def decode(data: bytes) -> object:
    """The message encoded in `data`, or ProtocolError for anything else (MSG-3)."""
    try:
        wire = marshal.loads(data)
        kind, fields = wire[0], wire[1:]
        if kind == "Receive":
            return Receive(fields[0], fields[1], tuple(SlotInfo(*s) for s in fields[2]))
        if kind == "Ack":
            return Ack(*fields)
        if kind == "Ready":
            return Ready(*fields)
        if kind == "Stop" and not fields:
            return Stop()
        if kind == "Init":
            protocol, receiver, manifest, slots, version, slot = fields
            entries = tuple(Entry(n, d, tuple(sh), dev, off, nb) for n, d, sh, dev, off, nb in manifest)
            return Init(protocol, receiver, entries, tuple(SlotInfo(*s) for s in slots), version, slot)
    except (ValueError, TypeError, IndexError, EOFError) as e:
        raise ProtocolError(f"undecodable message ({e}) (MSG-3)") from None
    raise ProtocolError(f"unknown message type {kind!r} (MSG-3)")


class PeerState(str, Enum):
    """The sender's view of one receiver (SM-S)."""

    UNCONNECTED = "unconnected"
    CONNECTING = "connecting"
    LIVE = "live"
    FAILED = "failed"
    GONE = "gone"
    STOPPED = "stopped"


class ReceiverState(str, Enum):
    """A receiver's own state (SM-R)."""

    NEW = "new"
    LIVE = "live"
    FAILED = "failed"
    STOPPED = "stopped"
    CLOSED = "closed"


_P = PeerState
SENDER_TABLE: dict[tuple[PeerState, str], PeerState] = {
    (_P.UNCONNECTED, "send Init"): _P.CONNECTING,
    (_P.CONNECTING, "recv Ready(ok)"): _P.LIVE,
    (_P.CONNECTING, "recv Ready(error)"): _P.FAILED,
    (_P.LIVE, "send Receive"): _P.LIVE,
    (_P.LIVE, "recv Ack"): _P.LIVE,
    (_P.UNCONNECTED, "send Stop"): _P.STOPPED,
    (_P.CONNECTING, "send Stop"): _P.STOPPED,
    (_P.LIVE, "send Stop"): _P.STOPPED,
    (_P.CONNECTING, "channel closed"): _P.GONE,
    (_P.LIVE, "channel closed"): _P.GONE,
    (_P.CONNECTING, "protocol violation"): _P.FAILED,
    (_P.LIVE, "protocol violation"): _P.FAILED,
    (_P.GONE, "new handle"): _P.UNCONNECTED,
    (_P.FAILED, "new handle"): _P.UNCONNECTED,
    (_P.CONNECTING, "new handle"): _P.UNCONNECTED,
}

_R = ReceiverState
RECEIVER_TABLE: dict[tuple[ReceiverState, str], ReceiverState] = {
    (_R.NEW, "recv Init(match)"): _R.LIVE,
    (_R.NEW, "recv Init(mismatch)"): _R.FAILED,
    (_R.NEW, "recv Stop"): _R.STOPPED,
    (_R.NEW, "channel closed"): _R.STOPPED,
    (_R.LIVE, "recv Receive"): _R.LIVE,
    (_R.LIVE, "recv Stop"): _R.STOPPED,
    (_R.LIVE, "channel closed"): _R.STOPPED,
    (_R.NEW, "close"): _R.CLOSED,
    (_R.LIVE, "close"): _R.CLOSED,
    (_R.FAILED, "close"): _R.CLOSED,
    (_R.STOPPED, "close"): _R.CLOSED,
    (_R.CLOSED, "close"): _R.CLOSED,
}


def step(table: dict, state: Enum, event: str, who: str = "") -> Enum:
    """The next state, or ProtocolError naming the state and the event (SM-S-9, SM-R-7)."""
    try:
        return table[(state, event)]
    except KeyError:
        where = f"{who}: " if who else ""
        raise ProtocolError(
            f"{where}event {event!r} is illegal in state {state.value!r}"
        ) from None


def message_event(msg: object) -> str:
    """The table event for a received message (status folded in for Ready)."""
    if isinstance(msg, Ready):
        return f"recv Ready({msg.status})"
    if isinstance(msg, MESSAGES):
        return f"recv {type(msg).__name__}"
    raise ProtocolError(f"unknown message {msg!r} (MSG-3)")
