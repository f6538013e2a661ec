"""The sender's reactor: its channels, who waits how, and what it does with each channel's events.

This module owns the threading rules of the sender (API-7). One lock guards the state and is
held only for bounded work; a call that must wait for answers either polls every channel itself
(`wait_for_events`, one thread at a time) or waits on a condition while another thread polls;
`take_arrived` handles what has arrived without waiting; close() from any thread ends every wait.
Each channel's session (session.py, with protocol.PeerMachine) decides what a message settles,
when a frame is overdue, when a lease expires and when a Heartbeat is due; `serve` only acts on
those events: a violation or an end of channel cuts that receiver off alone (SM-S-9, SEC-5). A
listening hub also runs a helper thread (helper.py). The Sender owns a Hub and calls it; the hub
knows no versions: what an answer settles and a joiner's Init go to the callbacks of `bind`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator

from . import helper, limits, transport, wire
from .callbacks import Joined, Settle, unbound
from .clock import Clock, Deadline, millis, monotonic
from .errors import ClosedError, LocalProtocolError, RemoteProtocolError, SyncTimeoutError
from .locking import Held, notify_all
from .messages import Heartbeat, Stop
from .netplane import Lane
from .peers import Peer
from .polling import PollSet
from .profiles import UNIX, Profile, of_scheme
from .protocol import PeerMachine, Settled
from .rendezvous import Listener
from .rwlock import unlock
from .session import Ended
from .slots import Group, SlotPool
from .transport import Channel, Handle

log = logging.getLogger("weightsync")

class Hub:
    """The channels, peers and waits of a sender; versions, slots' contents and the public calls are its owner's."""

    def __init__(self, pool: SlotPool, listen: str | None, num_workers: int,
                 times: tuple[float, float, float] = (limits.LEASE, limits.HEARTBEAT, limits.TRANSFER_TIMEOUT),
                 clock: Clock = monotonic):
        #: The network profile's lease, heartbeat and transfer timeout (API-10, NET-3, NET-4).
        self.lease, self.heartbeat, self.transfer_timeout = times
        self.clock = clock  # every timer's, and every deadline's
        self._settle_one: Settle = unbound
        self._joined: Joined = unbound
        self.mu = threading.Lock()
        self.cv = threading.Condition(self.mu)
        self.polling = False
        #: Threads that need the channels left alone (drop() closing one): callers wait instead of polling.
        self._holds = 0
        self.closed = False
        self.pool = pool
        self.peers: list[Peer] = []
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK)  # wake() never blocks: a full pipe wakes all the same
        self._stop_r, self._stop_w = os.pipe()
        self.helper: threading.Thread | None = None
        #: What the helper thread calls once every receiver that joined is gone (weightsync.torchrl: nothing
        #: outlives the workers); None: nothing.
        self.on_all_gone: Callable[[], None] | None = None
        #: What close() closes besides channels and slots: the listener.
        self._closables: list = []
        #: Lanes of receivers cut off or replaced, whose threads may still be ending: close() waits for them too.
        self._retired: list[Lane] = []
        # Whatever close() releases is also released when the hub is collected unclosed.
        self.finalizer = weakref.finalize(self, helper.release_when_free, self.mu, self.peers, pool, self._closables,
                                          self._retired, (self._wake_r, self._wake_w, self._stop_r, self._stop_w))
        try:
            self.listener = Listener(listen, num_workers, clock) if listen is not None else None
        except BaseException:
            self.finalizer()
            raise
        if self.listener is not None:
            self._closables.append(self.listener)
        self._polls = PollSet(self._wake_r, self.listener)  # used with the lock held, or by the one polling thread

    def bind(self, settle: Settle, joined: Joined) -> None:
        """The owner's callbacks, given once the owner exists: what an answer settles, and a joiner's Init."""
        self._settle_one, self._joined = settle, joined

    def start_helper(self) -> None:
        """A listening sender answers joins even while no call runs (RDV-6)."""
        if self.listener is not None:
            self.helper = helper.start(self, self._stop_r)

    def locked(self, deadline: Deadline, closing: bool = False) -> Held:
        """Takes the lock within `deadline` (SyncTimeoutError otherwise); refuses a closed sender."""
        if self.closed and not closing:  # also when a call left the lock held and close() went on without it
            raise ClosedError("the sender is closed (LIFE-6)")
        taken = False
        try:  # taken in the try: an interrupt on any line after it finds the lock to release (LIFE-9)
            taken = self.mu.acquire(False) or self.mu.acquire(timeout=-1 if (left := deadline.left()) is None else left)
            if not taken:
                raise SyncTimeoutError([], None, hint="another thread held the sender past the timeout (API-7)")
            if self.closed and not closing:
                raise ClosedError("the sender is closed (LIFE-6)")
            return Held(self.mu)
        except BaseException:  # a KeyboardInterrupt here included: the lock is not left held (LIFE-9)
            if taken:
                unlock(self.mu)
            raise

    @contextlib.contextmanager
    def quiet(self, deadline: Deadline) -> Iterator[None]:
        """With the lock held: waits until no other caller polls the channels, and keeps it so.

        For a change that closes a channel (drop()): a poller would otherwise wait on a
        closed descriptor. The polling caller is woken; until the block ends, callers wait.
        """
        held = False
        try:
            self._holds += 1
            held = True
            while self.polling:
                self.wake()
                left = deadline.left()
                if left is not None and left <= 0:
                    raise SyncTimeoutError([], None, hint="another thread polled the sender past the timeout (API-7)")
                self.cv.wait(left)
            yield
        finally:
            if held:
                self._holds -= 1
            notify_all(self.cv)

    @property
    def wake_fd(self) -> int:
        """What `wake()` makes readable, watched by the polling caller or, while none polls, the helper thread."""
        return self._wake_r

    def wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def wait_for_events(self, deadline: Deadline) -> None:
        """Lets answers arrive until `deadline`: polls the channels, or waits while another thread does.

        Called with the lock held; returns with it held. Raises ClosedError once close() ran.
        """
        if self.polling or self._holds:
            self.cv.wait(deadline.left())
        else:
            items = self._watched()
            wait = deadline.left()
            timer = self.next_timer(items)
            if timer is not None:
                wait = timer if wait is None else min(wait, timer)
            polls = self._polls
            polls.watch(items)
            released = False
            try:
                self.polling = True
                self.mu.release()
                released = True
                ready = polls.wait(millis(wait))
            finally:  # whatever interrupted the poll (a KeyboardInterrupt too): the lock back, the flag down (LIFE-9)
                if released:
                    self.mu.acquire()
                self.polling = False
                notify_all(self.cv)
            if self.closed:
                raise ClosedError("the sender was closed while this call waited (LIFE-6)")
            self.serve(ready)
        if self.closed:
            raise ClosedError("the sender was closed while this call waited (LIFE-6)")

    def take_arrived_if_free(self) -> None:
        """Reads the answers that have arrived, unless another thread is busy in the sender (API-2)."""
        if not self.mu.acquire(blocking=False):
            return
        try:
            if not self.closed:
                self.take_arrived()
        finally:
            self.mu.release()

    def take_arrived(self) -> None:
        """Handles what has arrived, without waiting; the polling thread, if any, does it instead."""
        if not self.polling:
            self._polls.watch(self._watched())
            ready = self._polls.ready_now()
            if not ready and self.listener is None:
                for p in self.peers:  # bytes to write, a frame in progress or a lease: serve() keeps them
                    if p.profile.leased or ((ch := p.channel) is not None and (ch.wants_write or ch.partial_since is not None)):
                        break
                else:
                    return  # nothing arrived, nothing due: the common case before a send
            self.serve(ready)

    def next_timer(self, items: list | None = None) -> float | None:
        """Seconds until a frame bound (WIRE-7), a join (RDV-6), a heartbeat or a lease (NET-4) falls due."""
        timers: list[float | None] = [ch.frame_timer() for ch in (self._watched() if items is None else items)
                                      if ch.session.frame.since is not None]
        if not timers and self.listener is None:
            return None  # no frame in progress, nothing leased: the common case between sends
        if self.listener is not None:
            timers.append(self.listener.timer())
            now = self.clock()
            timers += [p.liveness.left(now) for p in self.peers if p.liveness is not None and p.machine.active]
        due = [t for t in timers if t is not None]
        return min(due) if due else None

    def _watched(self) -> list[Channel]:
        """The channels to poll: active receivers', those with bytes to write, and joins under way."""
        items = []  # a loop, not a comprehension: this runs twice a send
        for p in self.peers:
            if (ch := p.channel) is not None and (p.machine.active or ch.wants_write):
                items.append(ch)
        return items + self.listener.channels() if self.listener is not None else items

    def serve(self, ready: list) -> None:
        """Reads, writes and handles what the channels in `ready` have, then cuts off stalled peers (WIRE-7)
        and silent ones (NET-4), and says "still here" where it is due."""
        if None in ready:
            try:
                while os.read(self._wake_r, 4096):
                    pass
            except BlockingIOError:
                pass
        for peer in self.peers:
            if peer.store_made is not None:  # its Init can go out now (Publisher._send_network_init)
                self._joined(peer)
            if peer.lane_failure is not None:
                (incarnation, why), peer.lane_failure = peer.lane_failure, None
                if peer.machine.incarnation == incarnation and peer.machine.active:
                    self.gone(peer, why)
            ch = peer.channel
            if ch is None or ch.closed:
                continue
            hit = ch in ready
            if not (hit or ch.wants_write or ch.session.frame.since is not None or peer.profile.leased):
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
                        self.settle(peer, event)
                    elif isinstance(event, Ended):
                        self.gone(peer, event.why)
                    else:  # a Heartbeat is due
                        self.write(peer, Heartbeat())
            except transport.ChannelClosed as e:
                if peer.machine.active:
                    self.gone(peer, f"channel closed: {e}")
            except RemoteProtocolError as e:
                e.peer, e.state = peer.machine.id, e.state or peer.machine.state.value
                self._violation(peer, e)
        if self.listener is not None:
            for rid, channel in self.listener.service(ready, self.can_join):
                self._adopt(self.peers[rid], channel)

    def can_join(self, rid: int) -> str | None:
        """Why receiver `rid` may not join now, or None (RDV-5)."""
        return self.peers[rid].machine.refuses_join(self.closed)

    def _adopt(self, peer: Peer, channel: Channel) -> None:
        """A receiver that joined by URL takes id `rid`: a new channel, as a new handle gives (SM-S-5, RDV-5)."""
        peer.machine.joined()
        self._drop(peer)
        assert self.listener is not None, "only a listening sender adopts joiners"
        self.use(peer, channel, None, of_scheme(self.listener.address.kind))  # the one its address speaks (NET-1)
        log.debug("receiver %d joined by URL", peer.machine.id)
        self._joined(peer)

    def lane_failed(self, peer: Peer, incarnation: int, why: str) -> None:
        """A lane's transfer failed (from the lane's thread): that incarnation is gone (NET-3).

        The lane's thread never takes the lock, so it cannot wait on a caller: it leaves the
        failure on the peer and wakes the polling caller, or the helper thread while no caller
        polls; that thread cuts the receiver off in `serve`.
        """
        peer.lane_failure = (incarnation, why)
        self.wake()

    def new_peer(self, i: int, group: Group, pair: bool | None = None) -> Peer:
        """A receiver's record; with a socket pair and a handle unless it will join by URL."""
        peer = Peer(PeerMachine(i), None, None, group)
        if self.listener is None if pair is None else pair:
            self.pair(peer)
        return peer

    def pair(self, peer: Peer) -> Handle:
        """A new socket pair for a receiver: our end its channel, the other end its handle (LIFE-2)."""
        ours, theirs = transport.socket_pair()
        handle = Handle(peer.machine.id, theirs)
        self.use(peer, Channel(ours, allowed=wire.FROM_RECEIVER, max_in=wire.MAX_TO_SENDER, now=self.clock), handle)
        return handle

    def use(self, peer: Peer, channel: Channel, handle: Handle | None, profile: Profile = UNIX) -> None:
        """`channel` becomes the receiver's, speaking `profile`; its session judges what arrives with the receiver's
        machine, and keeps the profile's lease (NET-4)."""
        channel.session.attach(peer.machine, profile.sender_liveness(self.clock(), self.lease, self.heartbeat))
        peer.channel, peer.handle, peer.profile = channel, handle, profile

    def replace(self, peer: Peer) -> None:
        """A new channel for a failed, gone or connecting receiver (SM-S-5, LIFE-2), or for an unconnected one
        whose handle went to a process (CON-3)."""
        peer.machine.new_handle()  # raises LocalProtocolError where the table has no such step
        self._drop(peer)
        self.pair(peer)
        self.wake()

    def _drop(self, peer: Peer) -> None:
        """Closes a receiver's channel, lane and any handle given out for it, before a new one replaces them."""
        self._retire(peer)
        if peer.channel is not None:
            peer.channel.close()
        if peer.handle is not None:
            peer.handle.conn.close()

    def write(self, peer: Peer, msg: object, fds: tuple[int, ...] = (), slot: int | None = None, slots=None) -> None:
        """`msg` to a receiver through its channel's session, which steps its machine first (Session.send)."""
        ch = peer.channel
        if ch is None:
            raise LocalProtocolError(f"receiver {peer.machine.id} is not connected (SEND-4)")
        try:
            ch.send(msg, fds, slot, slots)
        except transport.ChannelClosed as e:
            self.gone(peer, f"channel closed: {e}")
            return
        if ch.wants_write and self.polling:
            self.wake()  # the polling thread must watch for room to write

    def drop(self, peer: Peer, why: str) -> None:
        """Cuts a connecting or live receiver off as if it had died (API-9): Stop queued (not waited for), then closed."""
        failed = peer.machine.drop(why)
        if peer.channel is not None:
            with contextlib.suppress(transport.ChannelClosed):
                peer.channel.send(Stop())  # queued, not waited for: the channel closes next
        log.warning("receiver %d is gone: %s", peer.machine.id, why)
        self.cut_off(peer, failed)

    def stop(self, peer: Peer) -> None:
        """Stop to a receiver the table lets the sender stop (LIFE-4), where its channel takes it at once."""
        m = peer.machine
        if not m.stoppable:
            return
        if peer.channel is not None:
            try:
                peer.channel.send(Stop())  # the session steps the machine (Session.send)
            except (transport.ChannelClosed, OSError, ValueError):
                pass
        if m.stoppable:  # no channel, or one that failed before the frame was made
            m.send_stop()

    def gone(self, peer: Peer, why: str) -> None:
        log.warning("receiver %d is gone: %s", peer.machine.id, why)
        self.cut_off(peer, peer.machine.channel_closed(why))

    def _violation(self, peer: Peer, error: RemoteProtocolError) -> None:
        """A receiver that broke the protocol is cut off and fails what waits on it (SM-S-9)."""
        log.error("receiver %d broke the protocol: %s", peer.machine.id, error)
        self.cut_off(peer, peer.machine.violation(error))

    def cut_off(self, peer: Peer, failed: Iterable[int]) -> None:
        """Closes a receiver's channel and data-plane lane, then fails the versions that were pending on it."""
        if peer.channel is not None:
            peer.channel.close()
        self._retire(peer)
        m = peer.machine
        for v in failed:
            self._settle_one(v, m.id, m.cause, m.failure)

    def _retire(self, peer: Peer) -> None:
        """Aborts a receiver's lane without waiting for its thread (it may be building a group, which cannot be
        interrupted); close() waits for it, bounded, among the others."""
        lane, peer.lane = peer.lane, None
        if lane is not None:
            lane.close(abort=True)
            self._retired[:] = [old for old in self._retired if old.thread.is_alive()]  # the finalizer's list
            self._retired.append(lane)

    def settle(self, peer: Peer, settled: Settled) -> None:
        """What an answer settled, passed to the owner one version at a time."""
        for v in settled.versions:
            self._settle_one(v, peer.machine.id, settled.cause, settled.detail)

    @property
    def ended(self) -> bool:
        """Closed, or released unclosed (at interpreter exit, or sender.release()): nothing left to serve."""
        return self.closed or not self.finalizer.alive

    def all_gone(self) -> bool:
        """Every receiver has joined once and none is live, connecting or joining now."""
        return all(p.machine.ended for p in self.peers) and not (self.listener and self.listener.pending)

