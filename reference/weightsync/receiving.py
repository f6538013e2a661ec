"""A receiver's own rules, as a pure state machine: SM-R's table walked, VER-3, SLOT-1 and ACK-2.

protocol.py keeps both tables side by side, as spec/04-state-machines.md writes them,
and the sender's view of each receiver; this is the other end, the machine a Receiver's
channel session judges every message from the sender with, and `Newest`, the one
version waiting to be applied. No torch, no I/O, no threads, like the rest of the core.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .errors import LocalProtocolError, RemoteProtocolError
from .messages import OK, PROTOCOL_VERSION, Ack, Heartbeat, Init, Ready, Receive, SlotInfo, Stop
from .profiles import UNIX, Profile, of_init
from .protocol import RECEIVER_TABLE, ReceiverState, message_event, same_major, step


class ReceiverMachine:
    """A receiver's own state (SM-R-*): which messages it accepts, VER-3 and SLOT-1.

    `received` is the newest version it was told, applied or not; `known` the slots
    whose handles it holds; `profile` the one its Init speaks (NET-1).
    """

    def __init__(self, rid: int, byteorder: str = sys.byteorder):
        self.id = rid
        self.byteorder = byteorder
        self.state = ReceiverState.NEW
        self.received: int | None = None
        self.known: set[int] = set()
        self.offered: int | None = None  # the version of the Init judged, until Ready answers it
        self.answered: int | None = None  # the newest version answered (Ready or Ack): answers only go forward
        self.readied = False
        self.profile: Profile = UNIX

    def _step(self, event: str) -> ReceiverState:
        nxt = RECEIVER_TABLE.get((self.state, event))
        return nxt if nxt is not None else step(RECEIVER_TABLE, self.state, event, f"receiver {self.id}")

    def _bad(self, event: str, text: str, rule: str) -> RemoteProtocolError:
        return RemoteProtocolError(text, state=self.state.value, event=event, requirement=rule)

    @property
    def stopped(self) -> bool:
        """True exactly in stopped, failed and closed (SM-R-8)."""
        return self.state in _ENDED

    @property
    def live(self) -> bool:
        """Live: versions may still come, so a pull receiver looks for the sender's end between polls (LIFE-7)."""
        return self.state is ReceiverState.LIVE

    @property
    def awaiting_init(self) -> bool:
        """New: no Init accepted or refused yet; connect() runs here, once, and poll() only after it (SM-R-1)."""
        return self.state is ReceiverState.NEW

    @property
    def closed(self) -> bool:
        """close() ran: every later call raises ClosedError (LIFE-5, LIFE-6)."""
        return self.state is ReceiverState.CLOSED

    def handle(self, msg: object) -> object:
        """Checks a message from the sender against the state and the rules; returns it.

        An Init leaves the state unchanged until `accept_init` or `refuse_init`;
        a Receive updates what is known; Stop moves to stopped. Anything else
        raises RemoteProtocolError naming state, event and requirement (SM-R-7).
        """
        if type(msg) is Receive:  # the message of every send
            return self._receive(msg)
        event = message_event(msg)
        if isinstance(msg, Heartbeat):  # changes nothing, in new as in live, on every channel (MSG-4)
            self.state = self._step(event)
            return msg
        if isinstance(msg, Init):
            if self.state is not ReceiverState.NEW:
                raise self._bad(event, "a second Init", "SM-R-7")
            self._introduce(event, msg.slots)
            self.offered = msg.version
            self.profile = of_init(msg)  # chosen once, here
            self.known.update(self.profile.data_slots)  # the network's slot 0 is its data plane (NET-1)
            return msg
        if isinstance(msg, Stop):
            self.state = self._step(event)
            return msg
        raise self._bad(event, f"{type(msg).__name__} does not go to a receiver", "MSG-3")

    def _receive(self, msg: Receive) -> Receive:
        """A Receive: a newer version (VER-3), in a slot whose handle came (SLOT-1), introducing new ones (SLOT-5)."""
        event = "recv Receive"
        nxt = self._step(event)
        if self.received is not None and msg.version <= self.received:
            raise self._bad(event, f"Receive of version {msg.version} after version {self.received}", "VER-3")
        if msg.new_slots:
            self._introduce(event, msg.new_slots)
        if msg.slot not in self.known:
            raise self._bad(event, f"Receive names slot {msg.slot}, whose handle never came", "SLOT-1")
        self.received = msg.version
        self.state = nxt
        return msg

    def sent(self, msg: object) -> None:
        """Checks an answer about to be written to the sender: one Ready, for the Init judged (its version when ok),
        then Acks of versions received, each newer than the last answered (ACK-2). An illegal one raises
        LocalProtocolError and changes nothing, before any byte exists."""
        kind = type(msg)
        if kind is Ack:
            assert isinstance(msg, Ack)
            if self.received is None or msg.version > self.received or (
                    self.answered is not None and msg.version <= self.answered):
                raise LocalProtocolError(f"receiver {self.id}: Ack of version {msg.version}, received "
                                         f"{self.received}, answered {self.answered} (ACK-2)")
            self.answered = msg.version
        elif kind is Ready:
            assert isinstance(msg, Ready)
            if self.state is not ReceiverState.NEW or self.offered is None or self.readied:
                raise LocalProtocolError(f"receiver {self.id}: Ready in state {self.state.value}, once per Init (SM-R-1)")
            if msg.status == OK and msg.version != self.offered:
                raise LocalProtocolError(f"receiver {self.id}: Ready for version {msg.version}, the Init carried "
                                         f"{self.offered} (INIT-4)")
            self.readied = True
            if msg.status == OK:
                self.answered = msg.version
        elif kind is not Heartbeat:
            raise LocalProtocolError(f"receiver {self.id}: {kind.__name__} does not go to the sender (MSG-3)")

    def _introduce(self, event: str, slots: Sequence[SlotInfo]) -> None:
        if not slots:
            return
        ids = [s.slot for s in slots]
        again = sorted(set(ids) & self.known) or sorted({i for i in ids if ids.count(i) > 1})
        if again:
            raise self._bad(event, f"slot(s) {again} introduced twice", "SLOT-5")
        self.known.update(ids)

    def check_init(self, init: Init) -> None:
        """An Init this receiver must refuse: RemoteProtocolError for another protocol or receiver (INIT-2,
        MSG-2, SLOT-1), ValueError for bytes it cannot read (WIRE-8, answered as INIT-6 says)."""
        if not same_major(init.protocol, PROTOCOL_VERSION):
            raise self._bad("recv Init", f"the sender speaks protocol {init.protocol}, this receiver {PROTOCOL_VERSION}",
                            "INIT-2")
        if init.receiver != self.id:
            raise self._bad("recv Init", f"Init for receiver {init.receiver} reached receiver {self.id}", "MSG-2")
        if init.slot not in self.known:
            raise self._bad("recv Init", f"Init names slot {init.slot}, which it does not list", "SLOT-1")
        if init.byteorder != self.byteorder:  # well formed, but unusable here: Ready(error) as INIT-6 says
            raise ValueError(f"the slots hold {init.byteorder}-endian bytes, this host is {self.byteorder}-endian "
                             "(WIRE-8)")

    def accept_init(self, version: int) -> None:
        self.state = self._step("recv Init(match)")
        self.received = version

    def refuse_init(self) -> None:
        self.state = self._step("recv Init(mismatch)")

    def channel_closed(self) -> None:
        """End of channel, or the receiver's own cut after a violation: stopped (SM-R-3, SM-R-7)."""
        if self.state in (ReceiverState.NEW, ReceiverState.LIVE):
            self.state = self._step("channel closed")

    def close(self) -> None:
        self.state = self._step("close")


_ENDED = frozenset({ReceiverState.STOPPED, ReceiverState.FAILED, ReceiverState.CLOSED})


class Newest:
    """ACK-2 at a receiver: of the versions received and not yet applied only the newest waits; a newer one
    supersedes it, and the Ack of the newest answers the older ones too."""

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending: Receive | None = None

    def offer(self, msg: Receive) -> None:
        self.pending = msg  # VER-3: a later Receive carries a newer version

    def take(self) -> Receive | None:
        msg, self.pending = self.pending, None
        return msg

    def untake(self, msg: Receive) -> None:
        """A taken version was not applied (readers held it back): it waits again, unless a newer came."""
        if self.pending is None:
            self.pending = msg


__all__ = ["ReceiverMachine", "Newest"]
