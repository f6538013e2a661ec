"""The protocol's messages as immutable records, with no torch and no I/O (spec/03-messages.md).

wire.py turns them into bytes and back; protocol.py decides what each one
means in each state. Field names here are the field names on the wire.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

#: The protocol this package speaks: 1.0's messages and machines plus the wire profile of Part II.
PROTOCOL_VERSION = "1.1"
OK = "ok"
ERROR = "error"
STATUSES = (OK, ERROR)


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
    """A slot buffer; a CPU slot's handle (a file descriptor) travels beside the message."""

    slot: int
    device: str
    nbytes: int
    ipc: tuple = ()  # a CUDA slot's IPC handle and event handle; empty for a CPU slot


@dataclass(frozen=True)
class DataPlane:
    """Where and how a network receiver's versions travel (NET-1), and the lease it is held to (NET-4).

    Typed here and a map on the wire (wire.DATA_PLANE): every module reads these fields by name, none
    spells a key. Times are the wire's milliseconds; `lease` and `timeout` give them in seconds.
    """

    backend: str
    store: str  # "HOST:PORT" of this incarnation's TCPStore (NET-6)
    prefix: str  # fresh for each incarnation (NET-2)
    nbytes: int  # of each transfer: the version laid out as a slot
    timeout_ms: int  # the bound of one transfer (NET-3)
    lease_ms: int  # the sender's lease (NET-4)

    @property
    def lease(self) -> float:
        return self.lease_ms / 1000

    @property
    def timeout(self) -> float:
        return self.timeout_ms / 1000

    @property
    def store_address(self) -> tuple[str, int]:
        host, _, port = self.store.rpartition(":")
        return host, int(port)


@dataclass(frozen=True)
class Init:
    protocol: str
    receiver: int
    manifest: tuple[Entry, ...]
    slots: tuple[SlotInfo, ...]
    version: int
    slot: int
    byteorder: str = sys.byteorder  # of the slots' bytes (WIRE-8)
    capabilities: tuple[str, ...] = ()
    data_plane: DataPlane | None = None  # the network profile's transfers (NET-1); None on a Unix channel


@dataclass(frozen=True)
class Ready:
    receiver: int
    version: int | None
    status: str
    detail: str = ""
    holds_slot: bool = False
    protocol: str = PROTOCOL_VERSION
    capabilities: tuple[str, ...] = ()


@dataclass(frozen=True)
class Receive:
    version: int
    slot: int
    new_slots: tuple[SlotInfo, ...] = ()


@dataclass(frozen=True)
class Stop:
    pass


@dataclass(frozen=True)
class Heartbeat:
    """Says "still here" on a network channel that has carried nothing for a second (NET-4)."""


@dataclass(frozen=True)
class Ack:
    receiver: int
    version: int
    status: str
    detail: str = ""


# ---- rendezvous: a receiver that joins by URL proves it knows its secret first (RDV-3) ----


@dataclass(frozen=True)
class Hello:
    """The sender's first message on a joining connection: its protocol and a fresh challenge."""

    protocol: str
    nonce: bytes


@dataclass(frozen=True)
class Join:
    """The joiner's answer: which receiver it is, its own challenge, and its proof of the secret."""

    receiver: int
    nonce: bytes
    proof: bytes


@dataclass(frozen=True)
class Welcome:
    """The sender accepts, proving in turn that it knows the secret; Init follows."""

    proof: bytes


@dataclass(frozen=True)
class Refuse:
    """The sender refuses the join; the connection closes after it."""

    detail: str


#: Messages the sender sends, and messages a receiver sends (MSG-1), rendezvous included (RDV-3).
TO_RECEIVER = (Init, Receive, Stop, Heartbeat)
TO_SENDER = (Ready, Ack, Heartbeat)
RENDEZVOUS_TO_RECEIVER = (Hello, Welcome, Refuse)
RENDEZVOUS_TO_SENDER = (Join,)


def handle_count(msg: object) -> int:
    """How many buffer handles travel beside `msg`: one per listed slot whose ipc is empty (WIRE-4)."""
    if type(msg) is Receive:  # the message of every send, most often introducing no slot
        return sum(1 for s in msg.new_slots if not s.ipc) if msg.new_slots else 0
    if isinstance(msg, Init):
        return sum(1 for s in msg.slots if not s.ipc)
    return 0
