"""Every rule of the protocol, as pure state machines and timers: no torch, no I/O, no threads, no clock of its own.

The tables read row for row like those of spec/04-state-machines.md and spec/14-rendezvous.md.
`PeerMachine` is the sender's view of one receiver: its state, the versions pending on it and
their slots, the slots it holds and knows; a message from it either returns what it settles or
raises a RemoteProtocolError naming state, event and requirement. A receiver's own machine, which
walks RECEIVER_TABLE, is receiving.py's `ReceiverMachine`; the join by URL is join.py's
`JoinMachine`; the timing rules are timers.py's; SLOT-2 is sending.py's `free_slot`. Every number
comes from limits.py. Sender and Receiver drive these over sockets; nothing here blocks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from .errors import ANSWERED_ERROR, DIED, VIOLATION, LocalProtocolError, RemoteProtocolError
from .messages import OK, PROTOCOL_VERSION, STATUSES, Ack, Heartbeat, Init, Ready, Receive, Stop


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
    (_P.CONNECTING, "recv Heartbeat"): _P.CONNECTING,
    (_P.LIVE, "recv Heartbeat"): _P.LIVE,
    (_P.CONNECTING, "channel closed"): _P.GONE,
    (_P.LIVE, "channel closed"): _P.GONE,
    (_P.CONNECTING, "protocol violation"): _P.FAILED,
    (_P.LIVE, "protocol violation"): _P.FAILED,
    (_P.GONE, "new handle"): _P.UNCONNECTED,
    (_P.FAILED, "new handle"): _P.UNCONNECTED,
    (_P.CONNECTING, "new handle"): _P.UNCONNECTED,
    (_P.UNCONNECTED, "new handle"): _P.UNCONNECTED,  # only once its handle went to a process (CON-3)
    (_P.CONNECTING, "drop"): _P.GONE,
    (_P.LIVE, "drop"): _P.GONE,
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
    (_R.NEW, "recv Heartbeat"): _R.NEW,
    (_R.LIVE, "recv Heartbeat"): _R.LIVE,
    (_R.NEW, "close"): _R.CLOSED,
    (_R.LIVE, "close"): _R.CLOSED,
    (_R.FAILED, "close"): _R.CLOSED,
    (_R.STOPPED, "close"): _R.CLOSED,
    (_R.CLOSED, "close"): _R.CLOSED,
}


_S = TypeVar("_S", bound=Enum)


def step(table: dict[tuple[_S, str], _S], state: _S, event: str, who: str = "") -> _S:
    """The next state; an illegal pair raises RemoteProtocolError for a received message (the
    peer broke the protocol: SM-S-9, SM-R-7) and LocalProtocolError for anything else."""
    try:
        return table[(state, event)]
    except KeyError:
        pass
    where = f"{who}: " if who else ""
    if event.startswith("recv "):
        rule = "SM-S-9" if table is SENDER_TABLE else "SM-R-7"
        raise RemoteProtocolError(f"{where}{event} is illegal here", state=state.value, event=event, requirement=rule)
    raise LocalProtocolError(f"{where}event {event!r} is illegal in state {state.value!r}")


def message_event(msg: object) -> str:
    """The table event for a received message (the status folded in for Ready)."""
    if isinstance(msg, Ready):
        return f"recv Ready({msg.status})"
    return _EVENTS.get(type(msg)) or f"recv {type(msg).__name__}"


_EVENTS = {Ack: "recv Ack", Receive: "recv Receive", Init: "recv Init", Stop: "recv Stop", Heartbeat: "recv Heartbeat"}


def same_major(a: str, b: str) -> bool:
    """Whether two protocol versions share their major number (INIT-2)."""
    return a.split(".")[0] == b.split(".")[0]


@dataclass(slots=True)  # not frozen: one is made per answer, and nothing changes it
class Settled:
    """What one answer from a receiver settles: the pending versions it answers, and how (ACK-2)."""

    versions: tuple[int, ...]
    status: str
    detail: str

    @property
    def cause(self) -> str:
        """How the futures of these versions settle for this receiver: OK, or the cause ANSWERED_ERROR (SEND-7)."""
        return OK if self.status == OK else ANSWERED_ERROR


NOTHING = Settled((), OK, "")  # what a Heartbeat settles (MSG-4)


#: What `PeerMachine.handle_to_give` says handle(i) does (LIFE-2, CON-3).
KEEP, PAIR, REPLACE = "keep", "pair", "replace"
_ACTIVE = frozenset({PeerState.CONNECTING, PeerState.LIVE})  # PeerMachine.active, asked a few times a send


class PeerMachine:
    """The sender's view of receiver `id` (SM-S-*), with the bookkeeping the rules need.

    `pending` maps each version sent in an Init or Receive and not yet answered to
    its slot; `held` is the slot a zero-copy receiver still reads (ZC-2); `known`
    the slots whose handles it was given (SLOT-1).
    """

    def __init__(self, rid: int):
        self.id = rid
        self.state = PeerState.UNCONNECTED
        self.pending: dict[int, int] = {}
        self.held: set[int] = set()
        self.known: set[int] = set()
        self.holds_slot = False
        self.acked: int | None = None
        self.failure = ""
        self.cause = ""  # DIED, ANSWERED_ERROR or VIOLATION once it is gone or failed
        self.incarnation = 0  # how many channels replaced the first one
        self.unreported = False  # its handshake failed and no connect() has named it yet (INIT-5)
        self.stop_due = False  # dropped: the one Stop its channel may still carry (API-9)
        self.came = False  # its channel is one it joined on (RDV-3): a process did call connect()

    def _step(self, event: str) -> PeerState:
        nxt = SENDER_TABLE.get((self.state, event))
        return nxt if nxt is not None else step(SENDER_TABLE, self.state, event, f"receiver {self.id}")

    @property
    def active(self) -> bool:
        """Whether its channel is watched and it may read slots: connecting or live (SM-S-4)."""
        return self.state in _ACTIVE

    def pins(self) -> set[int]:
        """The slots it may read: those named by unanswered messages, and the one it holds (SLOT-2)."""
        return {*self.pending.values(), *self.held} if self.active else set()

    # ---- what the sender writes: every frame to a receiver steps this machine first (Session.send) ----

    def sent(self, msg: object, slot: int | None = None, slots: Iterable[int] | None = None) -> None:
        """Steps the table for `msg`, about to be written to this receiver; an illegal one raises
        LocalProtocolError and changes nothing, before any byte exists.

        `slot` is the sender's slot the message stands for, and `slots` the slot ids the receiver knows from
        now on, where the message does not name them itself (the network profile names slot 0, NET-1).
        """
        kind = type(msg)
        if kind is Receive:
            assert isinstance(msg, Receive)
            new = ([s.slot for s in msg.new_slots] if msg.new_slots else []) if slots is None else self.unknown(slots)
            self.send_receive(msg.version, msg.slot if slot is None else slot, new, introduces=True)
        elif kind is Init:
            assert isinstance(msg, Init)
            self.send_init(msg.version, msg.slot if slot is None else slot,
                           [s.slot for s in msg.slots] if slots is None else slots)
        elif kind is Stop:
            if self.stop_due:  # the Stop of a drop, written after the table moved to gone (API-9)
                self.stop_due = False
            else:
                self.send_stop()
        elif kind is Heartbeat:
            if not self.active:
                raise LocalProtocolError(f"receiver {self.id}: a Heartbeat in state {self.state.value} (NET-4)")
        else:
            raise LocalProtocolError(f"receiver {self.id}: {kind.__name__} does not go to a receiver (MSG-3)")

    def send_init(self, version: int, slot: int, slots: Iterable[int]) -> None:
        self.state = self._step("send Init")
        self.pending = {version: slot}
        self.known = set(slots)

    def unknown(self, slots: Iterable[int]) -> list[int]:
        """The slots whose handles it was not given: a Receive introduces them first (SLOT-1)."""
        return [s for s in slots if s not in self.known]

    def send_receive(self, version: int, slot: int, slots: Iterable[int], introduces: bool = False) -> list[int]:
        """Records Receive(version, slot); returns the slots it must be introduced to first (SLOT-1).

        With `introduces`, `slots` are those the Receive introduces: each must be new to it (SLOT-5),
        and `slot` known once they are (SLOT-1).
        """
        nxt, slots = self._step("send Receive"), list(slots)
        newest = max(self.pending) if self.pending else self.acked
        if newest is not None and version <= newest:
            raise LocalProtocolError(f"receiver {self.id}: version {version} after {newest} (VER-3)")
        new = self.unknown(slots) if slots else slots
        if introduces and slots and (len(new) != len(slots) or len(set(new)) != len(new)):
            raise LocalProtocolError(f"receiver {self.id}: slot(s) {sorted(set(slots) - set(new))} introduced again "
                                     "(SLOT-5)")
        if introduces and slot not in self.known and slot not in new:
            raise LocalProtocolError(f"receiver {self.id}: Receive names slot {slot}, whose handle it lacks (SLOT-1)")
        self.state = nxt
        self.known.update(new)
        self.pending[version] = slot
        return new

    def send_stop(self) -> None:
        self.state = self._step("send Stop")
        self.pending.clear()
        self.held.clear()

    def drop(self, why: str) -> tuple[int, ...]:
        """The trainer cuts it off (API-9): gone, as if it had died; returns the pending versions it fails.
        A Stop may follow on its channel, once."""
        failed = self._cut("drop", why, DIED)
        self.stop_due = True
        return failed

    def new_handle(self) -> None:
        """A new channel replaces the old one: nothing of the old incarnation carries over (SM-S-5)."""
        nxt = self._step("new handle")
        incarnation = self.incarnation + 1
        type(self).__init__(self, self.id)
        self.state, self.incarnation = nxt, incarnation

    # ---- what the caller may ask (checked here, before anything changes) ----

    @property
    def waiting(self) -> bool:
        """Not live yet and not ended: a connect() waits for its Ready (INIT-5)."""
        return self.state in (PeerState.UNCONNECTED, PeerState.CONNECTING)

    @property
    def live(self) -> bool:
        """Live: a send may go to it (SEND-4), and connect() leaves it as it is (INIT-5)."""
        return self.state is PeerState.LIVE

    def init_due(self, has_channel: bool) -> bool:
        """Whether connect() sends it the Init now: unconnected, with a channel to send on (INIT-1); one that joins
        by URL has none until it joins, and is sent its Init then (RDV-5)."""
        return self.state is PeerState.UNCONNECTED and has_channel

    def handle_to_give(self, fresh: bool, has_channel: bool) -> str:
        """What handle(i) gives (LIFE-2, CON-3): KEEP the handle of an unconnected receiver that went to no process
        yet (`fresh`), PAIR a first channel for an unconnected one that has none (it would join by URL), or
        REPLACE its channel with a new one, where the table allows "new handle"."""
        if self.state is PeerState.UNCONNECTED and fresh:
            return KEEP
        return PAIR if self.state is PeerState.UNCONNECTED and not has_channel else REPLACE

    @property
    def stoppable(self) -> bool:
        """Whether "send Stop" is a step of the table from here: the sender's close() stops it (LIFE-4)."""
        return (self.state, "send Stop") in SENDER_TABLE

    @property
    def ended(self) -> bool:
        """Failed or gone: a new handle or a new join restarts it (LIFE-2)."""
        return self.state in (PeerState.FAILED, PeerState.GONE)

    def check_handle(self) -> None:
        """LIFE-3: a live receiver gets no new handle."""
        if self.state is PeerState.LIVE:
            raise LocalProtocolError(
                f"receiver {self.id} is connected; a new handle is issued only once it failed or is gone (LIFE-3)")

    def check_connect(self, listening: bool) -> None:
        """LIFE-2: connect() to an ended receiver waits for a new join when listening; else it needs a new handle."""
        if not self.waiting and not listening:
            raise LocalProtocolError(f"receiver {self.id} is {self.state.value}; restart it with handle({self.id}) "
                                     "first (LIFE-2)")

    def refuses_join(self, closing: bool) -> str | None:
        """Why a valid Join for this receiver is refused, or None: one live connection per id (RDV-5)."""
        if self.state is PeerState.LIVE and not closing:
            return f"refused: receiver {self.id} is live in another process; one connection per receiver (RDV-5)"
        return "refused: the sender is closing" if closing else None

    def joined(self) -> None:
        """A valid Join takes this receiver's place: as a new handle does, unless nothing was connected (RDV-5)."""
        if self.state is not PeerState.UNCONNECTED:
            self.new_handle()
        self.came = True

    # ---- what arrives ----

    def handle(self, msg: object) -> Settled:
        """Applies a message from this receiver: what it settles, or RemoteProtocolError (SM-S-9)."""
        if type(msg) is Ack and msg.receiver == self.id and msg.status in STATUSES:  # the answer to every send
            return self._ack(msg, self._step("recv Ack"))
        event = message_event(msg)
        who = f"receiver {self.id}"
        rid = getattr(msg, "receiver", self.id)
        if rid != self.id:
            raise self._bad(event, f"{who} sent a message for receiver {rid}", "MSG-2")
        status = getattr(msg, "status", OK)
        if status not in STATUSES:
            raise self._bad(event, f"{who} sent status {status!r}; only 'ok' and 'error' exist", "MSG-1")
        nxt = self._step(event)
        if isinstance(msg, Heartbeat):  # ignored but for the lease, which the driver keeps (MSG-4, NET-4)
            return NOTHING
        if isinstance(msg, Ready):
            (version, slot), = self.pending.items()
            if msg.status != OK and msg.version is not None:
                raise self._bad(event, f"{who} answered Ready(error) with version {msg.version}; a refusal carries "
                                "none (Table 1)", "SM-S-9")
            if msg.status == OK and msg.version != version:
                raise self._bad(event, f"{who} answered Ready for version {msg.version}, Init carried {version}", "INIT-4")
            if msg.status == OK and not same_major(msg.protocol, PROTOCOL_VERSION):
                raise self._bad(event, f"{who} answered Ready(ok) in protocol {msg.protocol}; it must refuse an Init of "
                                f"protocol {PROTOCOL_VERSION} (INIT-2)", "SM-S-2")
            self.pending.clear()
            if msg.status == OK:
                self.holds_slot = msg.holds_slot
                self.held = {slot} if msg.holds_slot else set()
                self.acked = version
            else:
                self.failure, self.cause = msg.detail or "handshake failed", ANSWERED_ERROR
                self.unreported = True
            self.state = nxt
            return Settled((version,), msg.status, msg.detail)
        assert isinstance(msg, Ack)
        return self._ack(msg, nxt)

    def _ack(self, msg: Ack, nxt: PeerState) -> Settled:
        """An Ack whose receiver, status and step were checked: it answers each pending version up to its own (ACK-2)."""
        pending, version = self.pending, msg.version
        if version not in pending:
            raise self._bad("recv Ack", f"receiver {self.id} acked version {version}, which is not pending (pending: "
                            f"{sorted(pending)})", "ACK-5")
        slot, alone = pending[version], len(pending) == 1  # alone: one version in flight, the common case
        answered = (version,) if alone else tuple(v for v in pending if v <= version)
        self.pending = {} if alone else {v: s for v, s in pending.items() if v > version}
        if self.holds_slot:  # ZC-2: after an error it may still read the slot it held
            self.held = {slot} if msg.status == OK else self.held | {slot}
        self.acked = version if msg.status == OK else None
        self.state = nxt
        return Settled(answered, msg.status, msg.detail)

    def _bad(self, event: str, text: str, rule: str) -> RemoteProtocolError:
        return RemoteProtocolError(text, state=self.state.value, event=event, requirement=rule, peer=self.id)

    def channel_closed(self, why: str) -> tuple[int, ...]:
        """End of channel (or an expired lease): gone; returns the pending versions it fails (SEND-3).
        Before its Ready it never connected: most often no process was started with its handle."""
        if self.state is PeerState.CONNECTING and self.came:
            why = (f"never connected ({why}): it joined by URL and its handshake did not finish (its process "
                   "stopped or exited, or it could not build its data plane)")
        elif self.state is PeerState.CONNECTING:
            why = (f"never connected ({why}); no process with sender.handle({self.id}) or its URL called "
                   "connect(), or it exited first")
        return self._cut("channel closed", why, DIED)

    def violation(self, error: Exception) -> tuple[int, ...]:
        """It broke the protocol: failed and cut off; returns the pending versions it fails (SM-S-9)."""
        return self._cut("protocol violation", f"protocol violation: {error}", VIOLATION)

    def _cut(self, event: str, why: str, cause: str) -> tuple[int, ...]:
        self.unreported = self.unreported or self.state is PeerState.CONNECTING  # its handshake ended so (INIT-5)
        self.state = self._step(event)
        failed = tuple(self.pending)
        self.pending.clear()
        self.held.clear()
        self.failure, self.cause = why, cause
        return failed


__all__ = [
    "PROTOCOL_VERSION", "PeerState", "ReceiverState", "SENDER_TABLE", "RECEIVER_TABLE", "step",
    "message_event", "same_major", "Settled", "NOTHING", "PeerMachine", "KEEP", "PAIR", "REPLACE",
]
