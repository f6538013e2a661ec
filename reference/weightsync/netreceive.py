"""A receiver's side of the network profile (spec/15-network.md): the data plane, heartbeats and the lease.

Mixed into Receiver. On a network channel the receiver always runs one thread
that reads the channel and speaks every second (NET-4), and the Inbound thread
that takes each version's transfer into a buffer of its own (NET-2); the newest
one received waits in `_stash` for the applier (the push thread, or poll()),
which applies it at a safe point as on a Unix channel. Buffers in use (the one a
zero-copy receiver holds, the stashed one, the one being applied) are never
received into.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import torch

from . import layout, limits, netplane, transport
from .clock import Deadline
from .errors import RemoteProtocolError
from .messages import Heartbeat, Init, Receive, Stop
from .protocol import Liveness, ReceiverMachine
from .rwlock import ApplyLock, Cancelled
from .session import Ended, HeartbeatDue, Message
from .slots import Mapped


class NetworkReceiving:
    """The network-profile parts of Receiver, which provides the attributes and methods declared first."""

    # Receiver's own:
    id: int
    zero_copy: bool
    _channel: transport.Channel | None
    _machine: ReceiverMachine
    _init: Init | None
    _mapped: dict[int, Mapped]
    _views: dict[int, list[torch.Tensor]]
    _stash: Receive | None
    _lock: ApplyLock
    _closing: bool
    _wake_r: int

    if TYPE_CHECKING:
        @property
        def stopped(self) -> bool: ...
        def _answer(self, msg: object, deadline: Deadline | None = None) -> bool: ...
        def _broken(self, error: Exception) -> None: ...
        def _apply_and_ack(self, msg: Receive) -> tuple[str, str]: ...

    # The network profile's, set up by _net_setup and _net_start:
    _net: netplane.Inbound | None = None
    _cond: threading.Condition
    _applying: int | None  # the buffer being applied
    _held: int | None  # the buffer a zero-copy receiver's weights view
    _lease: float
    _io_thread: threading.Thread

    def _net_setup(self, init: Init, deadline: Deadline) -> int:
        """Builds the data plane and receives the Init's version; returns the buffer it is in (NET-2)."""
        assert init.data_plane is not None and self._channel is not None, "a network Init, read from the channel"
        self._cond = threading.Condition()
        self._applying = None
        self._held = None
        local = self._channel.sock.getsockname()[0]
        left = deadline.left()
        self._net = net = netplane.Inbound(init.data_plane, local,
                                           limits.TRANSFER_TIMEOUT if left is None else left)
        self._lease = init.data_plane["lease_ms"] / 1000
        b = net.receive_now(set())
        self._net_map(b)
        return b

    def _net_map(self, b: int) -> None:
        if b not in self._mapped:
            assert self._net is not None and self._init is not None, "called once _net_setup has run"
            self._mapped[b] = Mapped(self._net.buffers[b])
            self._views[b] = layout.views(self._net.buffers[b], self._init.manifest)

    def _net_start(self, held: int) -> None:
        """Starts the channel thread and the Inbound thread once Ready went out."""
        assert self._net is not None, "called once _net_setup has run"
        self._held = held if self.zero_copy else None
        assert self._channel is not None, "a network receiver joined by URL"
        self._channel.session.attach(self._machine, Liveness(time.monotonic(), self._lease,
                                                             limits.receiver_heartbeat(self._lease)))
        self._net.start(self._net_busy, self._net_arrived, self._net_failed)
        self._io_thread = threading.Thread(target=self._net_io, name=f"weightsync-net-{self.id}", daemon=True)
        self._io_thread.start()

    def _net_busy(self) -> set[int]:
        with self._cond:
            return {b for b in (self._held, self._applying, self._stash.slot if self._stash else None) if b is not None}

    def _net_arrived(self, version: int, b: int) -> None:
        with self._cond:
            self._net_map(b)
            self._stash = Receive(version, b)  # a newer one supersedes an older one (ACK-2)
            self._cond.notify_all()

    def _net_failed(self, why: str) -> None:
        self._broken(RemoteProtocolError(why, state=self._machine.state.value, event="transfer", requirement="NET-3"))
        self._net_notify()

    def _net_notify(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _net_io(self) -> None:
        """Reads the channel, hands each Receive to the Inbound thread, says "still here", keeps the lease."""
        ch, net = self._channel, self._net
        assert ch is not None and net is not None, "started by _net_start, after _net_setup"
        try:
            while not self._closing and not self.stopped:
                event = ch.next_event()  # the session judges: VER-3, slot 0 (NET-1), Stop, WIRE-7, NET-4, MSG-4
                if isinstance(event, Message):
                    if isinstance(event.msg, Stop):
                        return
                    assert isinstance(event.msg, Receive), "once live, the machine lets only Receive and Stop through"
                    net.expect(event.msg.version)
                elif isinstance(event, Ended):
                    if event.expired:  # a silent sender: stop, and say why (NET-4)
                        raise RemoteProtocolError(f"the sender: {event.why}", state=self._machine.state.value,
                                                  event="lease", requirement="NET-4")
                    self._machine.channel_closed()
                    return
                elif isinstance(event, HeartbeatDue):
                    self._answer(Heartbeat())
                else:
                    ready = transport.readable([ch, self._wake_r], ch.session.timer(time.monotonic()))
                    if self._closing:
                        return
                    if ch in ready:
                        ch.fill()
        except transport.ChannelClosed:
            self._machine.channel_closed()
        except RemoteProtocolError as e:
            self._broken(e)
        finally:
            self._net_notify()

    def _net_take(self, deadline: Deadline) -> Receive | None:
        """The newest version received and not applied, waiting until `deadline`; marks its buffer in use."""
        with self._cond:
            while self._stash is None and not self._closing and not self.stopped:
                if deadline.expired():
                    return None
                self._cond.wait(deadline.left())
            msg, self._stash = self._stash, None
            if msg is None or self._closing or self.stopped:
                return None
            self._applying = msg.slot
            return msg

    def _net_untake(self, msg: Receive) -> None:
        """Readers held a taken version back past poll()'s timeout: it is pending again, unless a newer came."""
        with self._cond:
            self._applying = None
            if self._stash is None:
                self._stash = msg

    def _net_applied(self, msg: Receive, ok: bool) -> None:
        with self._cond:
            self._applying = None
            if self.zero_copy and ok:
                self._held = msg.slot

    def _net_run(self) -> None:
        """Push mode over the network: apply each version received, at the next safe point."""
        forever = Deadline(None)
        while not self._closing and not self.stopped:
            msg = self._net_take(forever)
            if msg is None:
                continue
            try:
                self._lock.acquire_write(forever, lambda: self._closing)
            except Cancelled:
                return
            try:
                status, _ = self._apply_and_ack(msg)
            finally:
                self._lock.release_write()
                self._net_applied(msg, status == "ok")

    def _net_close(self) -> None:
        if self._net is not None:
            self._net_notify()
            io = getattr(self, "_io_thread", None)
            if io is not None and io is not threading.current_thread():
                io.join(limits.REACTION_BOUND)
            self._net.close()
