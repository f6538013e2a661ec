"""The sender's reactor: its channels, who waits how, and what it does with each channel's events.

This module owns the threading rules of the sender (API-7). One lock guards the
state and is held only for bounded work; a call that must wait for answers either
polls every channel itself (`_wait_for_events`, one thread at a time) or waits on a
condition while another thread polls; `_take_arrived` handles what has arrived
without waiting; close() from any thread ends every wait. Each channel's session
(session.py, with the receiver's protocol.PeerMachine) decides what a message
settles, when a frame is overdue, when a lease expires and when a Heartbeat is
due; `_serve` only acts on those events: a violation or an end of channel cuts
that receiver off alone (SM-S-9, SEC-5). A listening sender also runs one helper
thread that answers joins and notices hang-ups while no call runs (RDV-6), and on
network channels serves the leases and heartbeats (NET-4); it holds the sender
only weakly and ends with it.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import select
import threading
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import limits, netplane, transport, wire
from .clock import Clock, Deadline, millis, monotonic
from .errors import (
    ClosedError,
    LocalProtocolError,
    RemoteProtocolError,
    SyncTimeoutError,
)
from .messages import Heartbeat
from .netplane import Lane
from .protocol import PeerMachine, Settled
from .rendezvous import Listener
from .rwlock import unlock
from .session import Ended
from .slots import Group, SlotPool
from .timers import Liveness
from .transport import Channel, Handle

if TYPE_CHECKING:
    from typing import Self

    from .future import SendFuture

log = logging.getLogger("weightsync")


@dataclass
class Peer:
    machine: PeerMachine
    channel: Channel | None  # None while a receiver that joins by URL has not come
    handle: Handle | None  # None once consumed, and for a receiver that joins by URL
    group: Group
    lane: Lane | None = None
    lane_failure: tuple[int, str] | None = None  # (incarnation, why), left by the lane's thread

    @property
    def liveness(self) -> Liveness | None:
        """Its lease and our heartbeats, kept by its channel's session; only a network channel has them (NET-4)."""
        return None if self.channel is None else self.channel.session.liveness

    @property
    def network(self) -> bool:
        """Joined over TCP: a lane carries its versions (NET-2), a lease its liveness (NET-4)."""
        return self.liveness is not None


class Hub:
    """The channels, machines and waits of a sender; `Sender` adds versions, slots and the public calls."""

    _futures: dict[int, SendFuture]  # Sender's: each version whose targets have not all answered

    if TYPE_CHECKING:  # provided by Sender
        def _send_init(self, peer: Peer) -> None: ...
        def close(self) -> None: ...

    def __init__(self, pool: SlotPool, listen: str | None, num_workers: int,
                 times: tuple[float, float, float] = (limits.LEASE, limits.HEARTBEAT, limits.TRANSFER_TIMEOUT),
                 clock: Clock = monotonic):
        #: The network profile's lease, heartbeat and transfer timeout (API-10, NET-3, NET-4).
        self._lease, self._heartbeat, self._transfer_timeout = times
        self._clock = clock  # every timer's, and every deadline's
        self._mu = threading.Lock()
        self._cv = threading.Condition(self._mu)
        self._polling = False
        #: Threads that need the channels left alone (drop() closing one): callers wait instead of polling.
        self._holds = 0
        self._closed = False
        self._pool = pool
        self._peers: list[Peer] = []
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self._stop_r, self._stop_w = os.pipe()
        self._helper: threading.Thread | None = None
        #: Close once every receiver that joined is gone (weightsync.torchrl: nothing outlives the workers).
        self._close_when_all_gone = False
        #: What close() closes besides channels and slots: the listener.
        self._closables: list = []
        #: Lanes of receivers cut off or replaced, whose threads may still be ending: close() waits for them too.
        self._retired: list[Lane] = []
        # Whatever close() releases is also released when the sender is collected unclosed.
        self._finalizer = weakref.finalize(self, _release_when_free, self._mu, self._peers, pool, self._closables,
                                           self._retired, (self._wake_r, self._wake_w, self._stop_r, self._stop_w))
        try:
            self._listener = Listener(listen, num_workers, clock) if listen is not None else None
        except BaseException:
            self._finalizer()
            raise
        if self._listener is not None:
            self._closables.append(self._listener)

    def _start_helper(self) -> None:
        """A listening sender answers joins even while no call runs (RDV-6)."""
        if self._listener is not None:
            ref = weakref.ref(self)
            self._helper = threading.Thread(target=_serve_joins, args=(ref, self._stop_r),
                                            name="weightsync-listener", daemon=True)
            _HELPERS[self._helper] = ref
            self._helper.start()

    def _locked(self, deadline: Deadline, closing: bool = False) -> _Held:
        """Takes the lock within `deadline` (SyncTimeoutError otherwise); refuses a closed sender."""
        if self._closed and not closing:  # also when a call left the lock held and close() went on without it
            raise ClosedError("the sender is closed (LIFE-6)")
        left, taken = deadline.left(), False
        try:  # taken in the try: an interrupt on any line after it finds the lock to release (LIFE-9)
            taken = self._mu.acquire(timeout=-1 if left is None else left)
            if not taken:
                raise SyncTimeoutError([], None, hint="another thread held the sender past the timeout (API-7)")
            if self._closed and not closing:
                raise ClosedError("the sender is closed (LIFE-6)")
            return _Held(self._mu)
        except BaseException:  # a KeyboardInterrupt here included: the lock is not left held (LIFE-9)
            if taken:
                unlock(self._mu)
            raise

    @contextlib.contextmanager
    def _quiet(self, deadline: Deadline) -> Iterator[None]:
        """With the lock held: waits until no other caller polls the channels, and keeps it so.

        For a change that closes a channel (drop()): a poller would otherwise wait on a
        closed descriptor. The polling caller is woken; until the block ends, callers wait.
        """
        held = False
        try:
            self._holds += 1
            held = True
            while self._polling:
                self._wake()
                left = deadline.left()
                if left is not None and left <= 0:
                    raise SyncTimeoutError([], None, hint="another thread polled the sender past the timeout (API-7)")
                self._cv.wait(left)
            yield
        finally:
            if held:
                self._holds -= 1
            notify_all(self._cv)

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def _wait_for_events(self, deadline: Deadline) -> None:
        """Lets answers arrive until `deadline`: polls the channels, or waits while another thread does.

        Called with the lock held; returns with it held. Raises ClosedError once close() ran.
        """
        if self._polling or self._holds:
            self._cv.wait(deadline.left())
        else:
            items = self._watched()
            wait = deadline.left()
            timer = self._next_timer(items)
            if timer is not None:
                wait = timer if wait is None else min(wait, timer)
            poller = select.poll()
            by_fd: dict[int, Channel | Listener | None] = {self._wake_r: None}
            poller.register(self._wake_r, select.POLLIN)
            if self._listener is not None:
                by_fd[self._listener.fileno()] = self._listener
                poller.register(self._listener.fileno(), select.POLLIN)
            for ch in items:
                by_fd[ch.fileno()] = ch
                poller.register(ch.fileno(), transport.IN_EVENTS | (select.POLLOUT if ch.wants_write else 0))
            released = False
            try:
                self._polling = True
                self._mu.release()
                released = True
                events = poller.poll(millis(wait))
            finally:  # whatever interrupted the poll (a KeyboardInterrupt too): the lock back, the flag down (LIFE-9)
                if released:
                    self._mu.acquire()
                self._polling = False
                notify_all(self._cv)
            if self._closed:
                raise ClosedError("the sender was closed while this call waited (LIFE-6)")
            ready: list[Channel | Listener | None] = []
            for fd, ev in events:
                item = by_fd[fd]
                if isinstance(item, Channel):
                    item.hup = bool(ev & transport.HUP_EVENTS)
                ready.append(item)
            self._serve(ready)
        if self._closed:
            raise ClosedError("the sender was closed while this call waited (LIFE-6)")

    def _take_arrived_if_free(self) -> None:
        """Reads the answers that have arrived, unless another thread is busy in the sender (API-2)."""
        if not self._mu.acquire(blocking=False):
            return
        try:
            if not self._closed:
                self._take_arrived()
        finally:
            self._mu.release()

    def _take_arrived(self) -> None:
        """Handles what has arrived, without waiting; the polling thread, if any, does it instead."""
        if not self._polling:
            items = self._watched() + ([self._listener] if self._listener is not None else [])
            ready = transport.readable(items, 0)
            if ready or self._listener is not None or any(
                    p.network or (p.channel is not None and (p.channel.wants_write or p.channel.partial_since))
                    for p in self._peers):
                self._serve(ready)

    def _next_timer(self, items: list | None = None) -> float | None:
        """Seconds until a frame bound (WIRE-7), a join (RDV-6), a heartbeat or a lease (NET-4) falls due."""
        timers: list[float | None] = [ch.frame_timer() for ch in (self._watched() if items is None else items)
                                      if ch.partial_since is not None]
        if self._listener is not None:
            timers.append(self._listener.timer())
            now = self._clock()
            timers += [p.liveness.left(now) for p in self._peers if p.liveness is not None and p.machine.active]
        due = [t for t in timers if t is not None]
        return min(due) if due else None

    def _watched(self) -> list[Channel]:
        """The channels to poll: active receivers', those with bytes to write, and joins under way."""
        items = [p.channel for p in self._peers if p.channel is not None and (p.machine.active or p.channel.wants_write)]
        return items + (self._listener.channels() if self._listener is not None else [])

    def _serve(self, ready: list) -> None:
        """Reads, writes and handles what the channels in `ready` have, then cuts off stalled peers (WIRE-7)
        and silent ones (NET-4), and says "still here" where it is due."""
        if None in ready:
            try:
                while os.read(self._wake_r, 4096):
                    pass
            except BlockingIOError:
                pass
        for peer in self._peers:
            if peer.lane_failure is not None:
                (incarnation, why), peer.lane_failure = peer.lane_failure, None
                if peer.machine.incarnation == incarnation and peer.machine.active:
                    self._gone(peer, why)
            ch = peer.channel
            if ch is None or ch.closed:
                continue
            hit = ch in ready
            if not (hit or ch.wants_write or ch.session.frame.since is not None or peer.network):
                continue  # nothing arrived, nothing to write, no timer: the common case, kept cheap
            try:
                if ch.wants_write:
                    ch.flush()
                if not peer.machine.active:
                    continue
                if hit:
                    ch.fill()
                # The session decides (framing, WIRE-7, the machine, NET-4); this loop only acts.
                while peer.machine.active and (event := ch.next_event()) is not None:
                    if isinstance(event, Settled):
                        self._settle(peer, event)
                    elif isinstance(event, Ended):
                        self._gone(peer, event.why)
                    else:  # a Heartbeat is due
                        self._write(peer, Heartbeat())
            except transport.ChannelClosed as e:
                if peer.machine.active:
                    self._gone(peer, f"channel closed: {e}")
            except RemoteProtocolError as e:
                e.peer, e.state = peer.machine.id, e.state or peer.machine.state.value
                self._violation(peer, e)
        if self._listener is not None:
            for rid, channel in self._listener.service(ready, self._can_join):
                self._adopt(self._peers[rid], channel)

    def _can_join(self, rid: int) -> str | None:
        """Why receiver `rid` may not join now, or None (RDV-5)."""
        return self._peers[rid].machine.refuses_join(self._closed)

    def _adopt(self, peer: Peer, channel: Channel) -> None:
        """A receiver that joined by URL takes id `rid`: a new channel, as a new handle gives (SM-S-5, RDV-5)."""
        peer.machine.joined()
        self._drop(peer)
        assert self._listener is not None, "only a listening sender adopts joiners"
        network = not self._listener.address.carries_handles
        self._use(peer, channel, None, Liveness(self._clock(), self._lease, self._heartbeat) if network else None)
        log.debug("receiver %d joined by URL", peer.machine.id)
        self._send_init(peer)

    def _lane_failed(self, peer: Peer, incarnation: int, why: str) -> None:
        """A lane's transfer failed (from the lane's thread): that incarnation is gone (NET-3).

        The lane's thread never takes the lock, so it cannot wait on a caller: it leaves the
        failure on the peer and wakes the polling caller; that caller, or the helper thread
        within a heartbeat, cuts the receiver off in `_serve`.
        """
        peer.lane_failure = (incarnation, why)
        self._wake()

    def _new_peer(self, i: int, group: Group, pair: bool | None = None) -> Peer:
        """A receiver's record; with a socket pair and a handle unless it will join by URL."""
        peer = Peer(PeerMachine(i), None, None, group)
        if self._listener is None if pair is None else pair:
            self._pair(peer)
        return peer

    def _pair(self, peer: Peer) -> Handle:
        """A new socket pair for a receiver: our end its channel, the other end its handle (LIFE-2)."""
        ours, theirs = transport.socket_pair()
        handle = Handle(peer.machine.id, theirs)
        self._use(peer, Channel(ours, allowed=wire.FROM_RECEIVER, max_in=wire.MAX_TO_SENDER, now=self._clock), handle)
        return handle

    def _use(self, peer: Peer, channel: Channel, handle: Handle | None, liveness: Liveness | None = None) -> None:
        """`channel` becomes the receiver's; its session judges what arrives with the receiver's machine."""
        channel.session.attach(peer.machine, liveness)
        peer.channel, peer.handle = channel, handle

    def _replace(self, peer: Peer) -> None:
        """A new channel for a failed, gone or connecting receiver (SM-S-5, LIFE-2), or for an unconnected one
        whose handle went to a process (CON-3)."""
        peer.machine.new_handle()  # raises LocalProtocolError where the table has no such step
        self._drop(peer)
        self._pair(peer)
        self._wake()

    def _drop(self, peer: Peer) -> None:
        """Closes a receiver's channel, lane and any handle given out for it, before a new one replaces them."""
        self._retire(peer)
        if peer.channel is not None:
            peer.channel.close()
        if peer.handle is not None:
            peer.handle.conn.close()

    def _write(self, peer: Peer, msg: object, fds: tuple[int, ...] = ()) -> None:
        ch = peer.channel
        if ch is None:
            raise LocalProtocolError(f"receiver {peer.machine.id} is not connected (SEND-4)")
        try:
            ch.send(msg, fds)
        except transport.ChannelClosed as e:
            self._gone(peer, f"channel closed: {e}")
            return
        if ch.wants_write and self._polling:
            self._wake()  # the polling thread must watch for room to write

    def _gone(self, peer: Peer, why: str) -> None:
        log.warning("receiver %d is gone: %s", peer.machine.id, why)
        self._cut_off(peer, peer.machine.channel_closed(why))

    def _violation(self, peer: Peer, error: RemoteProtocolError) -> None:
        """A receiver that broke the protocol is cut off and fails what waits on it (SM-S-9)."""
        log.error("receiver %d broke the protocol: %s", peer.machine.id, error)
        self._cut_off(peer, peer.machine.violation(error))

    def _cut_off(self, peer: Peer, failed: Iterable[int]) -> None:
        """Closes a receiver's channel and data-plane lane, then fails the versions that were pending on it."""
        if peer.channel is not None:
            peer.channel.close()
        self._retire(peer)
        self._fail(peer, failed)

    def _retire(self, peer: Peer) -> None:
        """Aborts a receiver's lane without waiting for its thread (it may be building a group, which cannot be
        interrupted); close() waits for it, bounded, among the others."""
        lane, peer.lane = peer.lane, None
        if lane is not None:
            lane.close(abort=True)
            self._retired[:] = [old for old in self._retired if old.thread.is_alive()]  # the finalizer's list
            self._retired.append(lane)

    def _fail(self, peer: Peer, versions: Iterable[int]) -> None:
        m = peer.machine
        for v in versions:
            self._settle_one(v, m.id, m.cause, m.failure)

    def _settle(self, peer: Peer, settled: Settled) -> None:
        for v in settled.versions:
            self._settle_one(v, peer.machine.id, settled.cause, settled.detail)

    def _settle_one(self, version: int, rid: int, cause: str, detail: str) -> None:
        future = self._futures.get(version)
        if future is not None:
            future._settle(rid, cause, detail)
            if future._complete:  # nothing more can settle it
                del self._futures[version]

    @property
    def _ended(self) -> bool:
        """Closed, or released without close() (the finalizer at interpreter exit, TorchRL's release()):
        the helper thread has nothing left to serve."""
        return self._closed or not self._finalizer.alive

    def _all_gone(self) -> bool:
        """Every receiver has joined once and none is live, connecting or joining now."""
        return (all(p.machine.ended for p in self._peers)
                and not (self._listener and self._listener.pending))


def _release_when_free(mu: threading.Lock, *resources) -> None:
    """The finalizer, when no close() runs (collection, interpreter exit, TorchRL's release): takes the lock
    first, bounded, so that the helper thread is never inside a pass while what it serves is closed."""
    locked = mu.acquire(timeout=2 * _LOCK_WAIT)
    try:
        _release(*resources)
    finally:
        if locked:
            mu.release()


def release_held(finalizer: weakref.finalize) -> None:
    """The finalizer's work for close(), which holds the lock already: the finalizer is spent either way."""
    info = finalizer.detach()
    if info is not None:
        _release(*info[2][1:])  # its arguments without the lock


def _release(peers: list[Peer], pool: SlotPool, closables: list, retired: list[Lane], fds: tuple[int, ...]) -> None:
    """Closes every channel, lane, listener and slot (LIFE-4); at close() or when the sender is collected.

    Each lane's thread is waited for (bounded, netplane.end): it drops its receiver's gloo group and store,
    and one still doing that when the interpreter finalizes aborts the process. The slots close after it,
    since a lane sends from them."""
    if fds:
        try:
            os.write(fds[3], b"x")  # the helper thread, if any, ends
        except OSError:
            pass
    for peer in peers:  # handles given out are their holders' (close() closes them)
        if peer.channel is not None:
            peer.channel.close()
    netplane.end([peer.lane for peer in peers if peer.lane is not None] + retired)
    retired.clear()
    for item in closables:
        item.close()
    pool.close()
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass

def _serve_joins(ref: weakref.ReferenceType[Hub], stop_r: int) -> None:
    """A listening sender's helper thread: answers joins, and notices receivers that hang up, while no call runs.

    It holds the sender only weakly and only between waits, and takes the lock only
    when no caller is polling; a caller that polls sees the same events itself (RDV-6).
    """
    try:
        _serve(ref, stop_r)
    finally:
        _HELPERS.pop(threading.current_thread(), None)


#: The helper threads running, with their senders (weakly): ended at interpreter exit (_end_helpers).
_HELPERS: dict[threading.Thread, weakref.ReferenceType[Hub]] = {}
#: How long interpreter exit waits for each helper thread: it has been asked to end, and ends at its next wake-up.
_EXIT_JOIN = limits.CLOSE_WAIT


@atexit.register
def _end_helpers() -> None:
    """At interpreter exit, before daemon threads are frozen: each sender with a helper thread is released, as
    its finalizer would be, and the thread joined (bounded). A helper closing its sender (weightsync.torchrl's,
    once every worker is gone) frees torch tensors, and torch takes the GIL back after freeing one: a daemon
    thread doing that while the interpreter finalizes aborts the process ("terminate called without an active
    exception")."""
    for thread, ref in list(_HELPERS.items()):
        hub = ref()
        if hub is not None:
            hub._finalizer()  # released (bounded) and the helper told to end; spent already if closed
        del hub
        thread.join(_EXIT_JOIN)


def _serve(ref: weakref.ReferenceType[Hub], stop_r: int) -> None:
    while True:
        s = ref()
        if s is None or s._ended:
            return
        poller = select.poll()
        poller.register(stop_r, select.POLLIN)
        if not s._mu.acquire(timeout=_LOCK_WAIT):
            del s
            continue
        try:
            if s._ended:
                return
            listener = s._listener
            assert listener is not None, "only a listening sender has this thread"
            poller.register(listener.fileno(), select.POLLIN)
            for ch in listener.channels():
                poller.register(ch.fileno(), select.POLLIN)
            for p in s._peers:  # Unix channels: hang-ups only, so that acks never wake this thread
                if p.channel is not None and p.machine.active:
                    poller.register(p.channel.fileno(), _RDHUP | (select.POLLIN if p.network else 0))
            timer, beat = s._next_timer(), s._heartbeat
        finally:
            s._mu.release()
        del s
        # At most a heartbeat: a caller may have made a network receiver active since the snapshot
        # (a join its connect() took), and nothing here would wake for it (NET-4).
        events = poller.poll(millis(beat if timer is None else min(timer, beat)))
        if any(fd == stop_r for fd, _ in events):
            return
        s = ref()
        if s is None or not s._mu.acquire(timeout=_LOCK_WAIT):
            continue
        close = False
        try:
            if s._ended:  # closed or released while it waited: nothing is left to serve
                return
            if s._polling:  # the caller that polls handles these events; let it
                s._cv.wait(_LOCK_WAIT)
            else:
                s._take_arrived()
                s._cv.notify_all()
                close = s._close_when_all_gone and s._all_gone()
        finally:
            s._mu.release()
        if close:
            s.close()
        del s


_RDHUP = getattr(select, "POLLRDHUP", 0x2000)
#: How long the helper thread waits for the lock, or for a polling caller, before it looks at its stop pipe again.
_LOCK_WAIT = 0.5


class _Held:
    """What `with sender._locked(...)` holds: releases the lock on exit."""

    __slots__ = ("_mu",)

    def __init__(self, mu: threading.Lock):
        self._mu = mu

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        unlock(self._mu)


def notify_all(cv: threading.Condition) -> None:
    """Wakes the callers that wait for the sender; without the lock (an interrupted wait lost it) there is none to wake."""
    try:
        cv.notify_all()
    except RuntimeError:
        log.debug("the sender's lock was not held to notify")

