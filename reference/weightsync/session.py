"""One end of one channel, sans I/O: bytes, handles and the time in; messages, events and bytes out.

A Session is to a channel what h11's Connection is to an HTTP connection: it never
touches a socket, a thread, a lock or torch, and it never reads a clock (every call
takes `now`). It cuts the byte stream into frames (WIRE-1, WIRE-2), decodes them
(WIRE-3, MSG-3), pairs each frame with the handles it lists (WIRE-4), bounds a frame
in progress (WIRE-7), keeps the lease and says when a Heartbeat is due (NET-4), and
hands each message to the peer's state machine (protocol.py), which says what it
settles or that it is a violation. transport.Channel moves its bytes; the sender's
hub and the receiver act on its events.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from . import wire
from .errors import RemoteProtocolError
from .join import JoinMachine
from .messages import Heartbeat, handle_count
from .protocol import PeerMachine, Settled
from .receiving import ReceiverMachine
from .timers import FrameTimer, HeartbeatBudget, Liveness

# Events are plain slotted records: one is made per message on the hot path, and a frozen
# dataclass costs several times as much to build.


@dataclass(slots=True)
class Message:
    """A message the receiver's machine accepted, with the handles that came with it (WIRE-4)."""

    msg: object
    fds: list[int]


@dataclass(slots=True)
class Ended:
    """The channel is over: end of file, or the peer's lease expired (CON-1, NET-4)."""

    why: str
    expired: bool = False  # the lease ran out: the peer may still be there, silent


@dataclass(slots=True)
class HeartbeatDue:
    """Nothing was sent for the heartbeat interval: send Heartbeat now (NET-4)."""


HEARTBEAT_DUE = HeartbeatDue()
EOF_WHY = "its channel closed (process exited or receiver closed)"

Event = Settled | Message | Ended | HeartbeatDue


class Session:
    """One channel's protocol state. `allowed` is what may arrive now (MSG-3; a join changes it once done),
    `max_in` the frame bound (WIRE-2), `takes_handles` whether handles may come beside frames (WIRE-4).

    Bytes in: `receive_data`, `receive_eof`. Out: `next_message` (a decoded frame, before any machine),
    `next_event` (after the machine: what a message settles, the end of the channel, a due Heartbeat),
    `send` (a message as bytes), `timer` (when to call again). A broken rule raises RemoteProtocolError;
    handles that came with a refused frame are left in `orphans` for the driver to close.
    """

    def __init__(self, allowed: tuple, max_in: int, *, takes_handles: bool = False):
        self.allowed = allowed
        self._reader = wire.FrameReader(max_in)
        self._pack = wire.packer()  # the driver writes one frame at a time
        self._takes_handles = takes_handles
        self._fds: deque[int] = deque()
        self.orphans: list[int] = []
        self.frame = FrameTimer()  # WIRE-7
        self.eof = False
        self.machine: PeerMachine | ReceiverMachine | JoinMachine | None = None
        self.liveness: Liveness | None = None
        self._beats: HeartbeatBudget | None = None  # SEC-8, from the first Heartbeat on
        self._settles = False  # the machine is the sender's view of a receiver: answers settle versions
        self._joining = False  # the machine is a join's: once joined, the channel's allowed messages and bound change

    def attach(self, machine: PeerMachine | ReceiverMachine | JoinMachine, liveness: Liveness | None = None) -> None:
        """The machine that judges what arrives from now on (a joiner's join table, then the receiver's), and the
        lease on a network channel (NET-4)."""
        self.machine, self.liveness = machine, liveness
        self._settles = isinstance(machine, PeerMachine)
        self._joining = isinstance(machine, JoinMachine)

    # ---- bytes in ----

    def receive_data(self, data: bytes, fds: list[int], now: float) -> None:
        self._reader.feed(data)
        if fds:
            self._fds.extend(fds)
        self.frame.update(self._reader.partial, now)

    def receive_eof(self) -> None:
        self.eof = True

    def handles_truncated(self) -> None:
        """The kernel cut off handles that came with the last bytes: more than one message may carry (WIRE-4)."""
        raise RemoteProtocolError("more handles than one message may carry", event="recv frame", requirement="WIRE-4")

    def take_fds(self) -> list[int]:
        """Every handle held that no message took: the driver closes them (at close, or after a violation)."""
        out = [*self.orphans, *self._fds]
        self.orphans.clear()
        self._fds.clear()
        return out

    def next_message(self, now: float) -> tuple[object, list[int]] | None:
        """The next whole frame, decoded, with its handles; None while none is whole."""
        if self.frame.since is None and not self._reader.partial:
            return None  # nothing buffered: the common answer, kept cheap
        data = self._reader.next()
        self.frame.update(self._reader.partial, now)
        if data is None:
            return None
        msg = wire.decode(data, self.allowed)
        n = handle_count(msg) if self._takes_handles else 0
        if len(self._fds) < n:
            raise RemoteProtocolError(f"the frame lists {n} handles, {len(self._fds)} came with it",
                                      event="recv frame", requirement="WIRE-4")
        fds = [self._fds.popleft() for _ in range(n)] if n else []
        if self._fds and not self._reader.partial:
            self.orphans.extend(fds)
            raise RemoteProtocolError("handles came with no frame that lists them", event="recv frame",
                                      requirement="WIRE-4")
        if self.liveness is not None:
            self.liveness.hear(now)  # any frame counts, Heartbeat included (MSG-4)
        if type(msg) is Heartbeat:
            if self._beats is None:
                self._beats = HeartbeatBudget(now)
            self._beats.spend(now)
        return msg, fds

    @property
    def quiet(self) -> bool:
        """Nothing buffered, nothing timed: `next_event` would answer None whatever the time (the common case
        between messages, which a driver asks after each one)."""
        return self.liveness is None and not self.eof and not self._reader.partial

    def next_event(self, now: float) -> Event | None:
        """The next thing the driver must act on, or None for now.

        A message goes through the attached machine: for the sender's view of a receiver
        it becomes what it settles (a Heartbeat settles nothing, MSG-4); for a receiver it
        comes back as a Message once the machine accepted it (a Heartbeat does not come back).
        Then the end of the channel, a frame overdue (WIRE-7, raised), an expired lease
        or a due Heartbeat (NET-4).
        """
        machine = self.machine
        assert machine is not None, "attach() a machine before asking for events"
        if self.quiet:
            return None
        while (item := self.next_message(now)) is not None:
            msg, fds = item
            try:
                if self._settles:
                    settled = machine.handle(msg)
                    assert type(settled) is Settled, "the sender's view of a receiver settles answers"
                    if settled.versions or type(msg) is not Heartbeat:
                        return settled
                    continue
                machine.handle(msg)
            except RemoteProtocolError:
                self.orphans.extend(fds)
                raise
            if self._joining and machine.joined:  # type: ignore[union-attr]  # the join's last step (RDV-9)
                self.allowed, self._reader.max_frame = machine.after()  # type: ignore[union-attr]
                self._joining = False
            if type(msg) is not Heartbeat:
                return Message(msg, fds)
        if self.eof:
            return Ended(EOF_WHY)
        if self.frame.overdue(now):
            raise self.frame.violation(machine.state.value)
        if self.liveness is not None:
            due = self.liveness.due(now)
            if due == Liveness.EXPIRED:
                return Ended(self.liveness.expiry(), expired=True)
            if due == Liveness.HEARTBEAT_DUE:
                return HEARTBEAT_DUE
        return None

    # ---- bytes out ----

    def send(self, msg: object, now: float, slot: int | None = None, slots=None) -> bytes:
        """`msg` as the bytes of one frame, once the attached machine took it as its next step (`PeerMachine.sent`,
        `ReceiverMachine.sent`: an illegal message raises LocalProtocolError and no byte exists); sending counts
        as speaking (NET-4). `slot`, `slots`: what the message stands for where it does not say (NET-1)."""
        machine = self.machine
        if isinstance(machine, PeerMachine):
            machine.sent(msg, slot, slots)
        elif isinstance(machine, ReceiverMachine):
            machine.sent(msg)
        if self.liveness is not None:
            self.liveness.speak(now)
        return wire.frame(msg, self._pack)

    # ---- time ----

    def overdue(self, now: float) -> bool:
        return self.frame.overdue(now)

    def timer(self, now: float) -> float | None:
        """Seconds until a frame bound or a lease or heartbeat falls due; None when nothing is timed."""
        if self.frame.since is None and self.liveness is None:
            return None  # no frame in progress, no lease: the common case between messages
        times = [t for t in (self.frame.left(now), self.liveness.left(now) if self.liveness else None) if t is not None]
        return min(times) if times else None
