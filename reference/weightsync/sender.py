"""The sender: the public calls, versions, and publishing into the slot pool (spec sections 5-9).

What a message means and what it settles is decided in protocol.PeerMachine;
which slot may be written in slots.SlotPool; outcomes and errors in
future.SendFuture; channels, locking and waiting in hub.Hub, which Sender
extends. This module checks the caller's arguments and weights, writes a
version into one slot per device, tells the targets, and waits for them.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.context import BaseContext
from typing import Any, TypeAlias

import torch

from . import layout, limits, netplane, rendezvous, transport, wire
from .clock import Clock, Deadline, monotonic
from .errors import FIX, LocalProtocolError, SyncTimeoutError, receivers_error
from .future import RESTART_HINT, SendFuture
from .hub import Hub, Peer, notify_all, release_held
from .messages import PROTOCOL_VERSION, Entry, Init, Receive, Stop
from .packing import Packed
from .protocol import PeerState, outbox_full, readers, unsendable
from .rwlock import unlock
from .slots import CpuSlot, Group, Slot, SlotPool, slot_bound
from .timers import SettleWindow
from .transport import Handle

log = logging.getLogger("weightsync")

#: A slot device as `devices` may name it: "cuda:1", torch.device("cpu"), or a CUDA index (CUDA-1).
DeviceLike: TypeAlias = str | int | torch.device


class Sender(Hub):
    """Publishes versions of `weights` to `num_workers` receivers, and waits for their acks.

    The sender copies the weights into slots of its own, so the caller's tensors are
    never shared and training goes on while workers read (CONS-4). Receivers that share
    a slot device share one group of slots. Every call may be made from any thread, and
    every wait is bounded by the call's timeout (API-7). Use it as a context manager:
    leaving the block calls `close()`, which stops every receiver.

    Args:
        weights: an `nn.Module` (its `state_dict()`), a TensorDict, a mapping name -> tensor,
            or what `pack()` returned; all on one device. Version 0 is these values.
        num_workers: how many receivers, with ids `0 .. num_workers - 1`.
        devices: the slot device of each receiver (where the weights it reads live): a
            sequence indexed by receiver id, a function of the id, or None for the weights'
            own device. A sender that listens on `tcp://` keeps its slots on the CPU
            whatever device the weights are on (NET-7).
        ctx: the multiprocessing context the workers are started with (spawn or forkserver;
            a fork context is refused).
        max_slots: slots per slot device, at least 2. None: `num_workers + 2`, or 3 for a
            model above 1 GiB.
        listen: "unix:@NAME", "unix:PATH" or "tcp://HOST:PORT" (port 0 picks one): workers
            may then also join by `url(i)`, from other processes or, over TCP, other hosts.
        lease: seconds a silent TCP worker is waited for before it is named gone. Default 5 s.
        heartbeat: seconds the trainer stays silent on a TCP channel before it sends a
            heartbeat; less than `lease`. Default 1 s.
        transfer_timeout: seconds one TCP transfer of a version may take. Default 60 s.
        max_slot_bytes: bytes of slots per slot device, at least two slots' worth; it lowers
            `max_slots` to what it holds. None: no bound beyond `max_slots`.
        dtypes: slots in another floating dtype for the receivers that ask (an fp32 trainer,
            bf16 workers): one dtype for all, a sequence per receiver, or a function of the
            id; None keeps the weights' dtypes.
        clock: what every timer of this sender reads (the lease, heartbeats, join and frame
            bounds, the settle window, each call's timeout): the monotonic clock unless a test
            moves time on by hand (`weightsync.clock.ShiftedClock`).

    Raises:
        ValueError: weights the wire cannot carry, a bad count, device, dtype, bound or time,
            or a fork context.
        NotImplementedError: weights on several devices.
    """

    def __init__(self, weights: layout.Weights, num_workers: int, *,
                 devices: Sequence[DeviceLike] | Callable[[int], DeviceLike] | None = None,
                 ctx: BaseContext | None = None, max_slots: int | None = None, listen: str | None = None,
                 lease: float = limits.LEASE, heartbeat: float = limits.HEARTBEAT,
                 transfer_timeout: float = limits.TRANSFER_TIMEOUT, max_slot_bytes: int | None = None,
                 dtypes: torch.dtype | Sequence[torch.dtype | None] | Callable[[int], torch.dtype | None] | None = None,
                 clock: Clock = monotonic):
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"num_workers must be a positive int, got {num_workers!r}")
        if ctx is not None and ctx.get_start_method() == "fork":
            raise ValueError("a fork context cannot be used: receivers must be started with spawn or forkserver (CON-2)")
        times = limits.network_times(lease, heartbeat, transfer_timeout)
        self._source = weights
        flat = layout.flatten(weights)
        self._manifest = layout.make_manifest(flat)
        sources = sorted({e.device for e in self._manifest}) or ["cpu"]
        if len(sources) > 1:
            raise NotImplementedError(f"weights on several devices {sources}; move them to one device first")
        self._checker = layout.Checker(self._manifest)
        network = listen is not None and rendezvous.parse_address(listen).kind == "tcp"
        targets = _slot_devices(devices, num_workers, torch.device("cpu" if network else sources[0]), network)
        casts = _slot_dtypes(dtypes, num_workers, self._manifest)
        plans = {}  # (slot device, cast) -> (manifest on that device, bytes of one slot)
        for device, cast in dict.fromkeys(zip(targets, casts)):
            laid = layout.cast_manifest(self._manifest, cast) if cast is not None else self._manifest
            plans[(device, cast)] = (tuple(dataclasses.replace(e, device=str(device)) for e in laid),
                                     layout.slot_nbytes(laid, sources[0]))
        max_slots = slot_bound(max(n for _, n in plans.values()), num_workers, max_slots, max_slot_bytes)
        wire.check_init_fits(self._manifest, max_slots)
        self._version = 0
        self._futures: dict[int, SendFuture] = {}
        super().__init__(SlotPool(max_slots), listen, num_workers, times, clock)
        try:
            tensors = self._checker.ordered(flat)
            for (device, cast), (manifest, nbytes) in plans.items():
                group = self._pool.add_group(device, nbytes, manifest, torch.device(sources[0]), cast)
                group.slots[0].write(tensors)
                self._pool.publish(group, group.slots[0], 0)
            self._peers.extend(self._new_peer(i, self._pool.groups[SlotPool.key(targets[i], casts[i])])
                               for i in range(num_workers))
        except BaseException:
            self._finalizer()
            raise
        self._start_helper()
        log.debug("sender: %d entries on %s, slot groups %s", len(self._manifest), sources[0], list(self._pool.groups))

    # ---- public binding ----------------------------------------------------

    @property
    def version(self) -> int:
        """The last published version; 0 is the weights the sender was built from (VER-1)."""
        return self._version

    @property
    def num_workers(self) -> int:
        return len(self._peers)

    @property
    def manifest(self) -> tuple[Entry, ...]:
        return self._manifest

    @property
    def closed(self) -> bool:
        """True once `close()` was called (LIFE-4)."""
        return self._closed

    @property
    def address(self) -> str | None:
        """The address receivers join at (the port chosen for "tcp://HOST:0"), or None without `listen`."""
        return self._listener.address.text if self._listener else None

    def url(self, i: int) -> str:
        """What a process needs to join as receiver `i`: address, id and its secret (RDV-1, RDV-2).

        Keep it as secret as the weights: it lets its holder be receiver `i`.

        Args:
            i: the receiver id, `0 .. num_workers - 1`.

        Returns:
            The URL to pass to `Receiver(url)`.

        Raises:
            ValueError: `i` is not a receiver id.
            LocalProtocolError: the sender was made without `listen`.
        """
        with self._locked(Deadline(None, self._clock)):
            self._check_id(i)
            if self._listener is None:
                raise LocalProtocolError("this sender does not listen: create it with listen='unix:@name' (RDV-1)")
            return self._listener.url(i)

    def handle(self, i: int) -> Handle:
        """The picklable handle for receiver `i`: a new one after `i` failed or is gone (LIFE-2), or once
        its handle went to a process (CON-3).

        Pass it to one worker process, as an argument of a spawn or forkserver `Process`.

        Args:
            i: the receiver id, `0 .. num_workers - 1`.

        Returns:
            The handle to pass to `Receiver(handle)` in that process.

        Raises:
            ValueError: `i` is not a receiver id.
            LocalProtocolError: receiver `i` is connected.
            ClosedError: the sender is closed.
        """
        with self._locked(Deadline(None, self._clock)):
            peer = self._peers[self._check_id(i)]
            self._take_arrived()
            peer.machine.check_handle()  # LIFE-3
            if peer.machine.state is PeerState.UNCONNECTED and peer.handle is not None and not peer.handle.given:
                return peer.handle
            if peer.machine.state is PeerState.UNCONNECTED and peer.channel is None:  # listening: on demand
                return self._pair(peer)
            self._replace(peer)
            assert peer.handle is not None, "_replace gave it a new socket pair and its handle"
            return peer.handle

    def connect(self, timeout: float | None = None, *, workers: Iterable[int] | None = None) -> None:
        """The handshake (Init, then Ready) with `workers` (INIT-*).

        By default every receiver that is not live yet and has not failed: so after
        one receiver's failure was raised, calling connect() again waits for the rest.
        A receiver whose handshake failed while no connect() waited for it (it refused
        the Init, or went away, before this call) is named by it, once (INIT-5).
        A named receiver that is already live is left as it is.

        Args:
            timeout: seconds for the whole handshake; None (the default) waits without bound.
            workers: the receiver ids to connect; None for every one not yet connected.

        Raises:
            SyncTimeoutError: receivers that sent no Ready in time, named.
            ReceiverDiedError: receivers whose channel ended, named ("never connected" when no
                process took their handle).
            ReceiverError: receivers that refused the Init (Ready(error)), with their reasons.
            ClosedError: the sender is closed.
        """
        deadline = Deadline(timeout, self._clock)
        with self._locked(deadline):
            # A receiver whose handshake failed while no connect() waited for it is named by the next one (INIT-5).
            unreported = [i for i, p in enumerate(self._peers) if p.machine.unreported] if workers is None else []
            if workers is None:
                targets = [i for i, p in enumerate(self._peers) if p.machine.waiting] + unreported
            else:
                targets = [i for i in self._check_workers(workers) if self._peers[i].machine.state is not PeerState.LIVE]
            for i in targets:
                if i not in unreported:
                    self._peers[i].machine.check_connect(self._listener is not None)  # LIFE-2
            # A listening sender waits for a new process to join in place of a gone or failed one (RDV-5).
            rejoin = {i: self._peers[i].machine.incarnation for i in targets
                      if self._peers[i].machine.ended and i not in unreported}
            for i in targets:
                if self._peers[i].machine.state is PeerState.UNCONNECTED and self._peers[i].channel is not None:
                    self._send_init(self._peers[i])
            self._take_arrived()
            window = SettleWindow()
            while True:
                failed = {i: self._peers[i].machine for i in targets if self._peers[i].machine.ended
                          and self._peers[i].machine.incarnation != rejoin.get(i)}
                connecting = [i for i in targets if i not in failed and self._peers[i].machine.state is not PeerState.LIVE]
                if failed:
                    window.failed(self._clock())
                    if not connecting or window.over(self._clock()) or deadline.expired():
                        for m in failed.values():
                            m.unreported = False  # named once (INIT-5)
                        raise receivers_error({i: m.cause for i, m in failed.items()},
                                              {i: m.failure for i, m in failed.items()}, self._version, RESTART_HINT)
                if not connecting:
                    return
                if deadline.expired():
                    raise SyncTimeoutError(connecting, self._version, hint="no Ready; did each worker start and call "
                                           f"receiver.connect() with its handle or URL? (INIT-5). {FIX}start it, or pass a "
                                           "longer timeout=; sender.drop(i) gives up on it")
                self._wait_for_events(deadline.earlier(window.closes))

    def send(self, weights: layout.Weights | None = None, *, workers: Iterable[int] | None = None,
             timeout: float | None = None) -> int:
        """Publish a new version and return it once every target acked it (SEND-1, SEND-2).

        Args:
            weights: the values to publish (like the constructor's, same names, dtypes and shapes);
                None publishes the sender's own weights as they are now.
            workers: the receiver ids to send to; None (the default) sends to all.
            timeout: seconds for the wait for a free slot and for the acks together; None (the
                default) waits without bound.

        Returns:
            The version published.

        Raises:
            ReceiverError, ReceiverDiedError, SyncTimeoutError: one error naming every target at
                fault, with its cause; a SyncTimeoutError with `.version` None published nothing
                (no slot became free in time).
            WeightsMismatchError, ValueError: weights or workers that do not fit; nothing is
                published.
            ClosedError: the sender is closed.
        """
        deadline = Deadline(timeout, self._clock)
        with self._locked(deadline):
            future = self._publish(weights, workers, deadline)
            return self._await(future, deadline)

    def send_async(self, weights: layout.Weights | None = None, *, workers: Iterable[int] | None = None,
                   timeout: float | None = None) -> SendFuture:
        """Publish a new version without waiting for acks (SEND-5).

        Args:
            weights: as for `send()`.
            workers: as for `send()`.
            timeout: seconds for the wait for a free slot only; None (the default) waits
                without bound. `wait()` on the future bounds the wait for acks.

        Returns:
            A SendFuture: `wait()`, `done()`, `add_done_callback()`, `await`, `figures`.

        Raises:
            SyncTimeoutError: no slot became free in time; nothing was published.
            WeightsMismatchError, ValueError, ClosedError: as for `send()`.
        """
        deadline = Deadline(timeout, self._clock)
        with self._locked(deadline):
            return self._publish(weights, workers, deadline)

    def drop(self, i: int, timeout: float | None = None) -> None:
        """Cut receiver `i` off, as if it had died (API-9): for one that is alive but does not answer.

        The versions pending on it fail with ReceiverDiedError, the slots it pinned are
        free for the next send, and `handle(i)` or its URL restarts it. A receiver that is
        not connecting or live is left as it is.

        Args:
            i: the receiver id, `0 .. num_workers - 1`.
            timeout: seconds to wait for another thread to leave the sender; None (the
                default) waits without bound.

        Raises:
            ValueError: `i` is not a receiver id.
            SyncTimeoutError: another thread held the sender past `timeout`.
            ClosedError: the sender is closed.
        """
        deadline = Deadline(timeout, self._clock)
        with self._locked(deadline):
            peer = self._peers[self._check_id(i)]
            with self._quiet(deadline):
                if not peer.machine.active:
                    return
                if peer.channel is not None:
                    try:
                        peer.channel.send(Stop())  # queued, not waited for: the channel closes next
                    except transport.ChannelClosed:
                        pass
                self._gone(peer, "dropped by the trainer: sender.drop() (API-9)")

    def close(self) -> None:
        """Stop every receiver and release every channel and slot; idempotent (LIFE-4).

        A call waiting in another thread raises ClosedError. Every pending future is settled:
        a version every target had acked completes, the rest fail with ClosedError (LIFE-8).
        It returns within its bound even if a call interrupted by Ctrl-C left the lock held (LIFE-9).
        """
        bound = Deadline(0.9 * limits.REACTION_BOUND, self._clock)  # one bound for every wait below, not one each (LIFE-9)
        locked = self._mu.acquire(timeout=bound.cap(_CLOSE_LOCK_WAIT))
        if not locked:
            # Held past any real call's hold: left held by a call an exception interrupted
            # (a KeyboardInterrupt), or stuck. Close without it, so close() stays bounded (LIFE-9).
            log.error("sender close: the lock is held by no running call; closing without it")
        try:
            if self._closed and not self._finalizer.alive:
                return
            self._closed = True
            self._wake()
            if locked:  # without the lock, nobody polls and no answer can be read safely
                self._cv.wait_for(lambda: not self._polling, timeout=bound.cap(_CLOSE_LOCK_WAIT))
                try:
                    self._take_arrived()  # acks already here settle their versions before the rest fail (LIFE-8)
                except Exception:  # noqa: BLE001 - close() goes on whatever a channel holds
                    log.debug("sender close: reading the last answers failed", exc_info=True)
            for future in self._futures.values():
                future._close()
            self._futures.clear()
            for peer in self._peers:
                m = peer.machine
                if m.stoppable:
                    try:
                        if peer.channel is not None:
                            peer.channel.send(Stop())
                    except (transport.ChannelClosed, OSError, ValueError):
                        pass
                    m.send_stop()
                if peer.handle is not None:
                    peer.handle.conn.close()
            release_held(self._finalizer)  # held above, or waited for long enough already (LIFE-9)
            if locked:
                notify_all(self._cv)
            log.debug("sender closed at version %d", self._version)
        finally:
            unlock(self._mu)  # ours, or one a call left held: later calls find it free, and the sender closed
        helper = self._helper
        if helper is not None and helper.ident is not None and helper is not threading.current_thread():
            helper.join(bound.left())

    def __enter__(self) -> Sender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        states = ",".join(p.machine.state.value for p in self._peers)
        return f"Sender(version={self._version}, receivers=[{states}], closed={self._closed})"

    def _send_init(self, peer: Peer) -> None:
        # Our copy of their end goes first, so that a receiver that never
        # started or already died reads as end of file at once (SEND-3).
        if peer.handle is not None:
            peer.handle.conn.close()
        group, latest = peer.group, peer.group.latest
        assert latest is not None, "version 0 is published when a group is made"
        peer.machine.send_init(self._version, latest.id, [s.id for s in group.slots])
        if peer.network:
            self._send_network_init(peer)
        else:
            init = Init(PROTOCOL_VERSION, peer.machine.id, group.manifest, group.infos(), self._version, latest.id)
            self._write(peer, init, group.handles(group.slots))
        self._wake()

    def _send_network_init(self, peer: Peer) -> None:
        """Init without slots, naming the data plane; the Init's version follows on it (NET-1, NET-2)."""
        group = peer.group
        if group.device.type != "cpu":
            self._gone(peer, f"slots on {group.device}: the network profile carries host memory (NET-7)")
            return
        channel, latest = peer.channel, group.latest
        assert channel is not None and self._listener is not None, "a network receiver joined by URL"
        assert isinstance(latest, CpuSlot), "a CPU group's latest slot; version 0 is published when it is made"
        local = channel.sock.getsockname()[0]
        store = netplane.Store(self._listener.address.sockaddr[0], self._transfer_timeout, self._lease)  # NET-6
        plane = store.data_plane(local, group.nbytes)
        init = Init(PROTOCOL_VERSION, peer.machine.id, group.manifest, (), self._version, 0,
                    capabilities=("network",), data_plane=plane)
        self._write(peer, init)
        incarnation, ref = peer.machine.incarnation, weakref.ref(self)

        def failed(why: str) -> None:  # weakly: a lane must not keep the sender alive
            sender = ref()
            if sender is not None:
                sender._lane_failed(peer, incarnation, why)

        peer.lane = netplane.Lane(store, plane, local, failed, self._clock)
        peer.lane.submit(self._version, latest.buffer.tensor)

    # ---- checks --------------------------------------------------------------------

    def _check_id(self, i: int) -> int:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self._peers):
            raise ValueError(f"receiver id must be an int in [0, {len(self._peers)}), got {i!r} (SEND-6)")
        return i

    def _check_workers(self, workers: Iterable[int]) -> list[int]:
        if isinstance(workers, (str, bytes)) or not hasattr(workers, "__iter__"):
            raise ValueError(f"workers must be a list of receiver ids, got {workers!r} (SEND-6)")
        ids = [self._check_id(i) for i in workers]
        if not ids:
            raise ValueError("workers must name at least one receiver (SEND-6)")
        if len(set(ids)) != len(ids):
            raise ValueError(f"workers lists a receiver twice: {ids} (SEND-6)")
        return ids

    def _check_targets(self, targets: list[int]) -> None:
        """No version is consumed for a target known to be unusable (SEND-4)."""
        known, ids = unsendable(self._peers[i].machine for i in targets)
        if known:
            raise receivers_error({m.id: m.cause for m in known}, {m.id: m.failure for m in known}, None, RESTART_HINT)
        if ids:
            raise LocalProtocolError(f"receiver(s) {ids} are not connected; call sender.connect() first (SEND-4)")

    # ---- publishing ----------------------------------------------------------------

    def _publish(self, weights: layout.Weights | None, workers: Iterable[int] | None,
                 deadline: Deadline) -> SendFuture:
        started = self._clock()
        targets = list(range(len(self._peers))) if workers is None else self._check_workers(workers)
        self._take_arrived()
        source = self._source if weights is None else weights
        packed = (source if isinstance(source, Packed) and (source is self._source or source.manifest == self._manifest)
                  else None)  # weights laid out like the slots: one copy (API-8)
        if packed is not None:
            packed.check()  # constant time unless a packed tensor may have left the buffer (API-8)
        else:  # a plain dict goes straight to the checker, which rejects what flatten would (BAD-1, BAD-2)
            tensors = self._checker.ordered(source if type(source) is dict else layout.flatten(source))
        self._check_targets(targets)
        chosen = self._free_slots(targets, deadline)  # group -> slot
        for slot in chosen.values():
            if packed is not None:
                slot.write_buffer(packed.buffer, packed.tensors)  # a cast slot converts each array (LAYOUT-3)
                continue
            try:
                slot.write(tensors)
            except RuntimeError:
                # A tensor reshaped through `.data` as a view of itself keeps its pointer and version:
                # the copy into the free slot finds it; check everything and name it (BAD-2). The slot
                # is free, nobody reads it, and nothing is published.
                self._checker.forget()
                self._checker.ordered(source if type(source) is dict else layout.flatten(source))
                raise
        self._version += 1
        future = SendFuture(self._version, targets, self._take_arrived_if_free, self._wait,
                            nbytes=sum(group.nbytes for group in chosen), clock=self._clock)
        self._futures[self._version] = future
        # Every group gets each version, once per device, so that a joiner on any
        # device starts from the latest (LIFE-1, LAYOUT-2).
        ids: dict[Group, list[int]] = {}
        for group, slot in chosen.items():
            self._pool.publish(group, slot, self._version)
            ids[group] = [s.id for s in group.slots]
        for i in targets:
            peer = self._peers[i]
            slot = chosen[peer.group]
            new = peer.machine.send_receive(self._version, slot.id, ids[peer.group])
            if peer.network:  # the version follows on the data plane (NET-2)
                self._write(peer, Receive(self._version, 0, ()))
                if peer.lane is not None:
                    assert isinstance(slot, CpuSlot), "the network profile carries CPU slots only"
                    peer.lane.submit(self._version, slot.buffer.tensor)
                continue
            new_slots = [self._pool.by_id(peer.group, sid) for sid in new]
            msg = Receive(self._version, slot.id, tuple(s.info() for s in new_slots))
            self._write(peer, msg, peer.group.handles(new_slots))
        future._published_after(self._clock() - started)
        log.debug("published version %d to %s", self._version, targets)
        return future

    def _free_slots(self, targets: list[int], deadline: Deadline) -> dict[Group, Slot]:
        """A free slot per group, waiting (bounded) for acks and for slow readers' channels (SLOT-3, SEC-3)."""
        first = True
        while True:
            if not first:  # a target may have gone while this call waited (SEND-4)
                self._check_targets(targets)
            first = False
            stuck = [i for i in targets if (ch := self._peers[i].channel) is not None and outbox_full(ch.out_bytes)]
            chosen: dict[Group, Slot] = {}
            full: Group | None = None
            for group in self._pool.groups.values():
                pins = [p.machine.pins() for p in self._peers if p.group is group]
                slot = self._pool.choose(group, pins)
                if slot is None:
                    full = group
                    break
                chosen[group] = slot
            if full is None and not stuck:
                return chosen
            if deadline.expired():
                if stuck:
                    raise SyncTimeoutError(stuck, None, hint="it does not read its channel; nothing was published (SEC-3)")
                assert full is not None, "a group without a free slot is why none was chosen"
                machines = [p.machine for p in self._peers if p.group is full]
                blocking = sorted({i for s in full.slots for i in readers(s.id, machines)})
                raise SyncTimeoutError(
                    blocking, None,
                    hint=f"every one of {self._pool.max_slots} slots is held by them; nothing was published (SLOT-3). "
                         f"{FIX}sender.drop(i) frees a stuck receiver's slots; else pass a longer timeout= or a larger "
                         "max_slots=",
                )
            self._wait_for_events(deadline)

    def _await(self, future: SendFuture, deadline: Deadline) -> int:
        """Waits for every target's answer; raises one error naming every receiver at fault (SEND-2, SEND-7)."""
        looked = False
        while True:
            by = future._settle_by()
            if future._complete or (by is not None and self._clock() >= by):
                error = future._error(timed_out=False)
                if error is None:
                    return future.version
                raise error
            if deadline.expired():
                if not looked:  # wait(0) still reads the answers that have arrived (SEND-5)
                    looked = True
                    self._take_arrived()
                    continue
                error = future._error(timed_out=True)
                assert error is not None, "a target that has not answered has timed out"
                raise error
            self._wait_for_events(deadline.earlier(by))

    def _wait(self, future: SendFuture, deadline: Deadline) -> int:
        with self._locked(deadline):
            return self._await(future, deadline)

#: How long close() waits for the lock, and for a polling call to let go, before it closes without them:
#: a running call holds the lock for moments (it gives it up to wait), so a longer hold is a lock left held.
_CLOSE_LOCK_WAIT = 2.0
def _per_receiver(option: Sequence[Any] | Callable[[int], Any], n: int, name: str) -> list[Any]:
    """An option given per receiver: a sequence of one value each, or a function of the id."""
    if callable(option):
        return [option(i) for i in range(n)]
    values = list(option)
    if len(values) != n:
        raise ValueError(f"{name} names {len(values)} values for {n} receivers")
    return values


def _slot_dtypes(dtypes: torch.dtype | Sequence[torch.dtype | None] | Callable[[int], torch.dtype | None] | None,
                 n: int, manifest: tuple[Entry, ...]) -> list[torch.dtype | None]:
    """The floating dtype of each receiver's slots when it is not the weights': None otherwise (LAYOUT-3)."""
    if dtypes is None:
        return [None] * n
    wanted: list[torch.dtype | None] = ([dtypes] * n if isinstance(dtypes, torch.dtype)
                                        else _per_receiver(dtypes, n, "dtypes (LAYOUT-3)"))
    floating = {layout.dtype_of(e.dtype) for e in manifest if layout.dtype_of(e.dtype).is_floating_point}
    out: list[torch.dtype | None] = []
    for i, d in enumerate(wanted):
        if d is not None and d not in layout.CAST_DTYPES:
            raise ValueError(f"dtypes[{i}] is {d!r}: slots may be cast only to one of "
                             f"{[str(t) for t in layout.CAST_DTYPES]} (LAYOUT-3)")
        out.append(None if d is None or floating <= {d} else d)  # nothing to convert: the weights' own slots
    return out


def _slot_devices(devices: Sequence[DeviceLike] | Callable[[int], DeviceLike] | None, n: int,
                  source: torch.device, network: bool = False) -> list[torch.device]:
    """The slot device of each receiver: `devices[i]`, `devices(i)`, or the weights' device (CUDA-1); for a sender
    that listens on TCP, the CPU (NET-7)."""
    wanted: list[DeviceLike] = [source] * n if devices is None else _per_receiver(devices, n, "devices")
    out = []
    for d in map(torch.device, wanted):
        if network and d.type != "cpu":
            raise ValueError(f"slot device {d} requested, but a sender that listens on tcp:// keeps its slots on the "
                             "CPU: the network carries host memory, and a worker copies into a target on its GPU "
                             "(NET-7). Leave devices= out")
        if d.type == "cuda":
            if not torch.cuda.is_available():
                raise ValueError(f"slot device {d} requested, but CUDA is not available here")
            d = torch.device("cuda", torch.cuda.current_device() if d.index is None else d.index)
        elif d.type != "cpu":
            raise ValueError(f"slot device {d} is neither cpu nor cuda")
        out.append(d)
    return out
