"""Where a receiver's next version comes from: its Unix channel, or the network profile's data plane.

The receiver has one applier (its push thread, or poll()) over one of these, the one
its Init's profile names in `SOURCES`. Each holds the newest version received and not
yet applied, which supersedes an older one (ACK-2), and offers the same calls: `setup`
(the Init's version, before Ready) and `start` (after it), `take` (wait, bounded, for a
version and mark it in use), `untake` (readers held it back: pending again, unless a
newer came), `applied`, and `close`.

ChannelPending reads the Unix channel in the applier's own thread. NetworkPending
(spec/15-network.md) runs a thread that reads the channel, keeps the lease and
speaks every heartbeat (NET-4), and the Inbound thread that receives each version
into a buffer of its own (NET-2); buffers in use (the one a zero-copy receiver
holds, the pending one, the one being applied) are never received into.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from . import devices, limits, netplane, transport
from .clock import Deadline
from .errors import LocalProtocolError, RemoteProtocolError
from .messages import Heartbeat, Init, Receive, Stop
from .profiles import NetworkProfile, UnixProfile
from .receiving import Newest, ReceiverMachine
from .session import Ended, HeartbeatDue, Message

if TYPE_CHECKING:
    from .applier import Applier


class Pending(Protocol):
    def setup(self, fds: list[int], deadline: Deadline) -> int: ...
    def start(self, held: int) -> None: ...
    def take(self, deadline: Deadline) -> Receive | None: ...
    def untake(self, msg: Receive) -> None: ...
    def applied(self, msg: Receive, ok: bool) -> None: ...
    def close(self, bound: Deadline) -> None: ...


class ChannelPending:
    """Versions announced on a Unix channel, read by the thread that applies them.

    `applier.map` maps the slots an Init or a Receive brings (WIRE-4); `closing()` says
    close() has begun; a byte on `wake_fd` ends a wait.
    """

    def __init__(self, channel: transport.Channel, machine: ReceiverMachine, init: Init, zero_copy: bool,
                 applier: Applier, closing: Callable[[], bool], wake_fd: int):
        self._channel, self._machine, self._init, self._applier = channel, machine, init, applier
        self._closing, self._wake_fd = closing, wake_fd
        self._newest = Newest()  # ACK-2

    def setup(self, fds: list[int], deadline: Deadline) -> int:
        """Maps the Init's slots, whose handles came with it; returns the slot of its version (INIT-1, WIRE-4).
        A GPU slot's Init then names the index this process maps that GPU on (CUDA-1)."""
        init, applier = self._init, self._applier
        applier.map(init.slots, fds)
        device = devices.mapped_device(applier.mapped[init.slot])
        applier.init = init if device is None else devices.with_device(init, device)
        return init.slot

    def start(self, held: int) -> None:
        """The applier's own thread reads the channel: nothing to start."""

    def take(self, deadline: Deadline) -> Receive | None:
        """The newest Receive not yet applied, reading the channel until `deadline` for one.

        None once the deadline passed with none, or after Stop or end of channel: no version
        is applied after Stop, even one that came before it (LIFE-7). A violation raises.
        """
        while True:
            self._read(deadline)
            if self._closing() or self._machine.stopped:
                return None
            if self._newest.pending is not None or deadline.expired():
                return self._newest.take()

    def untake(self, msg: Receive) -> None:
        self._newest.untake(msg)

    def applied(self, msg: Receive, ok: bool) -> None:
        pass

    def close(self, bound: Deadline) -> None:
        pass

    def _read(self, deadline: Deadline) -> None:
        """Reads every message that is ready, waiting until `deadline` for one when none is pending."""
        ch = self._channel
        got = False
        while not self._closing():
            # the session judges: SM-R-7, VER-3, SLOT-1, WIRE-7, MSG-4; a newer version pending is not waited for
            event = ch.next_event() if got else ch.wait_event(
                Deadline(0.0, ch.now) if self._newest.pending is not None else deadline, self._wake_fd)
            if event is None:
                return  # fill() took what the socket held, the deadline passed, or close() woke the wait
            if isinstance(event, Message):
                if isinstance(event.msg, Receive):
                    if event.msg.new_slots:
                        self._applier.map(event.msg.new_slots, event.fds)
                    self._newest.offer(event.msg)
                got = True
                if self._machine.stopped:
                    return
                continue
            if isinstance(event, Ended):
                self._machine.channel_closed()
            return


class NetworkPending:
    """Versions that arrive over the data plane of a TCP receiver (NET-2, NET-4).

    `setup` builds the data plane and receives the Init's version before Ready; `start`
    runs the channel's thread and the Inbound thread once Ready went out. `mapped(b, tensor)`
    registers a receive buffer with the receiver, `answer(msg)` writes to the channel,
    `broken(error)` stops the receiver (SM-R-7).
    """

    def __init__(self, channel: transport.Channel, machine: ReceiverMachine, init: Init, zero_copy: bool,
                 applier: Applier, closing: Callable[[], bool], wake_fd: int):
        assert init.data_plane is not None, "a network Init names its data plane (NET-1)"
        self._channel, self._machine, self._init, self.zero_copy = channel, machine, init, zero_copy
        self._mapped, self._answer, self._broken = applier.map_buffer, applier.answer, applier.broken
        self._closing, self._wake_fd = closing, wake_fd
        self._cond = threading.Condition()
        self._newest = Newest()  # ACK-2
        self._applying: int | None = None  # the buffer being applied
        self._held: int | None = None  # the buffer a zero-copy receiver's weights view
        self._lease = init.data_plane.lease
        self._net: netplane.Inbound | None = None
        self._io_thread: threading.Thread | None = None
        self._settled = threading.Event()  # the handshake is over: its heartbeats end
        self._beats = threading.Thread(target=self._beat_until_settled, name="weightsync-net-handshake", daemon=True)

    def setup(self, fds: list[int], deadline: Deadline) -> int:
        """Builds the data plane and receives the Init's version; returns the buffer it is in (NET-2)."""
        assert self._init.data_plane is not None, "checked at construction"
        local = self._channel.sock.getsockname()[0]
        left = deadline.left()
        # The group's construction, the first transfer and its apply can outlast the lease (a large model): the
        # channel speaks meanwhile, as NET-4 asks from the join on, or the sender would take this receiver for
        # gone. The beats end once Ready went out (start) or the receiver closes.
        self._beats.start()
        try:
            self._net = net = netplane.Inbound(self._init.data_plane, local,
                                               limits.TRANSFER_TIMEOUT if left is None else left)
            b = net.receive_now(set())
        except BaseException:
            self._settled.set()
            raise
        self._mapped(b, net.buffers[b])
        return b

    def _beat_until_settled(self) -> None:
        """Heartbeats every receiver interval until the handshake is over or the channel fails (NET-4)."""
        every = limits.receiver_heartbeat(self._lease)
        while not self._settled.wait(every) and not self._closing():
            try:
                if not self._answer(Heartbeat()):
                    return
            except LocalProtocolError:  # the handshake ended meanwhile (a refusal): nothing more to say
                return

    def start(self, held: int) -> None:
        """Starts the channel's thread and the Inbound thread once Ready went out."""
        assert self._net is not None, "called once setup() has run"
        self._settled.set()  # the channel's own heartbeats take over (attach, below)
        self._held = held if self.zero_copy else None
        self._channel.session.attach(self._machine, self._machine.profile.receiver_liveness(self._channel.now(),
                                                                                            self._lease))
        self._net.start(self._busy, self._arrived, self._failed)
        self._io_thread = threading.Thread(target=self._io, name="weightsync-net-io", daemon=True)
        self._io_thread.start()

    # ---- the applier's side ----

    def take(self, deadline: Deadline) -> Receive | None:
        """The newest version received and not applied, waiting until `deadline`; marks its buffer in use."""
        with self._cond:
            while self._newest.pending is None and not self._closing() and not self._machine.stopped:
                if deadline.expired():
                    return None
                self._cond.wait(deadline.left())
            msg = self._newest.take()
            if msg is None or self._closing() or self._machine.stopped:
                return None
            self._applying = msg.slot
            return msg

    def untake(self, msg: Receive) -> None:
        """Readers held a taken version back past poll()'s timeout: it is pending again, unless a newer came."""
        with self._cond:
            self._applying = None
            self._newest.untake(msg)

    def applied(self, msg: Receive, ok: bool) -> None:
        with self._cond:
            self._applying = None
            if self.zero_copy and ok:
                self._held = msg.slot

    def close(self, bound: Deadline) -> None:
        """Ends the I/O thread and the data plane within `bound`, the receiver's close() bound (LIFE-5)."""
        self._settled.set()
        self._notify()
        io = self._io_thread
        if io is not None and io is not threading.current_thread():
            io.join(bound.left())
        if self._net is not None:
            self._net.close(bound)

    # ---- the threads' side ----

    def _busy(self) -> set[int]:
        with self._cond:
            waiting = self._newest.pending
            return {b for b in (self._held, self._applying, waiting.slot if waiting else None) if b is not None}

    def _arrived(self, version: int, b: int) -> None:
        assert self._net is not None, "only the Inbound thread calls this"
        with self._cond:
            self._mapped(b, self._net.buffers[b])
            self._newest.offer(Receive(version, b))
            self._cond.notify_all()

    def _failed(self, why: str) -> None:
        self._broken(RemoteProtocolError(why, state=self._machine.state.value, event="transfer", requirement="NET-3"))
        self._notify()

    def _notify(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _io(self) -> None:
        """Reads the channel, hands each Receive to the Inbound thread, says "still here", keeps the lease."""
        ch, net, forever = self._channel, self._net, Deadline(None, self._channel.now)
        assert net is not None, "started by start(), after setup()"
        try:
            while not self._closing() and not self._machine.stopped:
                event = ch.wait_event(forever, self._wake_fd)  # the session judges: VER-3, slot 0 (NET-1), Stop,
                # WIRE-7, NET-4, MSG-4; its lease and heartbeat timers end each wait, a byte on the wake pipe too
                if isinstance(event, Message):
                    if isinstance(event.msg, Stop):
                        return
                    assert isinstance(event.msg, Receive), "once live, the machine lets only Receive and Stop through"
                    net.expect(event.msg.version)
                elif isinstance(event, Ended):
                    if event.expired:  # a silent sender: stop, and say why (NET-4)
                        raise self._machine.profile.lease_expired(event.why, self._machine.state.value)
                    self._machine.channel_closed()
                    return
                elif isinstance(event, HeartbeatDue):
                    self._answer(Heartbeat())
        except transport.ChannelClosed:
            self._machine.channel_closed()
        except RemoteProtocolError as e:
            self._broken(e)
        finally:
            self._notify()


#: Where each profile's versions come from (the receiver picks by the profile its Init speaks, NET-1).
SOURCES: dict[type, type[ChannelPending] | type[NetworkPending]] = {UnixProfile: ChannelPending,
                                                                     NetworkProfile: NetworkPending}
