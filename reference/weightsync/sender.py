"""The sender: the public calls (spec sections 5-9), each checking its arguments and taking the lock.

What a message means and what it settles is decided in protocol.PeerMachine;
which slot may be written in slots.SlotPool; outcomes and errors in
future.SendFuture; channels, locking and waiting in hub.Hub; writing versions and
waiting for answers in publishing.Publisher. A Sender owns one of each and calls
them; nothing here is inherited.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.context import BaseContext

import torch

from . import connecting, helper, layout, limits, options, rendezvous, wire
from .callbacks import weakly
from .clock import Clock, Deadline, monotonic
from .errors import LocalProtocolError
from .future import SendFuture
from .hub import Hub
from .messages import Entry
from .options import DeviceLike
from .profiles import UNIX, of_scheme
from .protocol import KEEP, PAIR
from .publishing import Publisher
from .slots import SlotPool, slot_bound
from .transport import Handle

log = logging.getLogger("weightsync")


class Sender:
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
        flat = layout.flatten(weights)
        manifest = layout.make_manifest(flat)
        sources = sorted({e.device for e in manifest}) or ["cpu"]
        if len(sources) > 1:
            raise NotImplementedError(f"weights on several devices {sources}; move them to one device first")
        checker = layout.Checker(manifest)
        profile = of_scheme(rendezvous.parse_address(listen).kind) if listen is not None else UNIX  # its joiners
        targets = options.slot_devices(devices, num_workers, torch.device(profile.slot_source(sources[0])), profile)
        casts = options.slot_dtypes(dtypes, num_workers, manifest)
        plans = {}  # (slot device, cast) -> (manifest on that device, bytes of one slot)
        for device, cast in dict.fromkeys(zip(targets, casts)):
            laid = layout.cast_manifest(manifest, cast) if cast is not None else manifest
            plans[(device, cast)] = (tuple(dataclasses.replace(e, device=str(device)) for e in laid),
                                     layout.slot_nbytes(laid, sources[0]))
        max_slots = slot_bound(max(n for _, n in plans.values()), num_workers, max_slots, max_slot_bytes)
        for laid, _ in plans.values():  # each group's Init: a cast one names longer dtypes (SEC-7)
            wire.check_init_fits(laid, max_slots)
        # The hub calls the publisher back weakly: nothing it holds keeps this sender alive.
        hub = self._hub = Hub(SlotPool(max_slots), listen, num_workers, times, clock)
        self._publisher = Publisher(hub, weights, manifest, checker)
        hub.bind(weakly(self._publisher.settle), weakly(self._publisher.send_init))
        try:
            tensors = checker.ordered(flat)
            for (device, cast), (laid, nbytes) in plans.items():
                group = hub.pool.add_group(device, nbytes, laid, torch.device(sources[0]), cast)
                group.slots[0].write(tensors)
                hub.pool.publish(group, group.slots[0], 0)
            hub.peers.extend(hub.new_peer(i, hub.pool.groups[SlotPool.key(targets[i], casts[i])])
                             for i in range(num_workers))
        except BaseException:
            hub.finalizer()
            raise
        hub.start_helper()
        log.debug("sender: %d entries on %s, slot groups %s", len(manifest), sources[0], list(hub.pool.groups))

    # ---- public binding ----------------------------------------------------

    @property
    def version(self) -> int:
        """The last published version; 0 is the weights the sender was built from (VER-1)."""
        return self._publisher.version

    @property
    def num_workers(self) -> int:
        return len(self._hub.peers)

    @property
    def manifest(self) -> tuple[Entry, ...]:
        return self._publisher.manifest

    @property
    def closed(self) -> bool:
        """True once `close()` was called (LIFE-4)."""
        return self._hub.closed

    @property
    def address(self) -> str | None:
        """The address receivers join at (the port chosen for "tcp://HOST:0"), or None without `listen`."""
        listener = self._hub.listener
        return listener.address.text if listener else None

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
        hub = self._hub
        with hub.locked(Deadline(None, hub.clock)):
            options.check_id(i, len(hub.peers))
            if hub.listener is None:
                raise LocalProtocolError("this sender does not listen: create it with listen='unix:@name' (RDV-1)")
            return hub.listener.url(i)

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
        hub = self._hub
        with hub.locked(Deadline(None, hub.clock)):
            peer = hub.peers[options.check_id(i, len(hub.peers))]
            hub.take_arrived()
            peer.machine.check_handle()  # LIFE-3
            handle = peer.handle
            todo = peer.machine.handle_to_give(handle is not None and not handle.given, peer.channel is not None)
            if todo == KEEP:
                assert handle is not None, "KEEP names a handle no process took"
                return handle
            if todo == PAIR:  # listening: on demand
                return hub.pair(peer)
            hub.replace(peer)
            assert peer.handle is not None, "replace() gave it a new socket pair and its handle"
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
        connecting.connect(self._hub, self._publisher, workers, Deadline(timeout, self._hub.clock))

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
        deadline = Deadline(timeout, self._hub.clock)
        with self._hub.locked(deadline):
            future = self._publisher.publish(weights, workers, deadline)
            return self._publisher.await_answers(future, deadline)

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
        deadline = Deadline(timeout, self._hub.clock)
        with self._hub.locked(deadline):
            return self._publisher.publish(weights, workers, deadline)

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
        hub = self._hub
        deadline = Deadline(timeout, hub.clock)
        with hub.locked(deadline):
            peer = hub.peers[options.check_id(i, len(hub.peers))]
            with hub.quiet(deadline):
                if peer.machine.active:
                    hub.drop(peer, "dropped by the trainer: sender.drop() (API-9)")

    def close(self) -> None:
        """Stop every receiver and release every channel and slot; idempotent (LIFE-4).

        A call waiting in another thread raises ClosedError. Every pending future is settled:
        a version every target had acked completes, the rest fail with ClosedError (LIFE-8).
        It returns within its bound even if a call interrupted by Ctrl-C left the lock held (LIFE-9).
        """
        helper.close(self._hub, self._publisher.close_futures)
        log.debug("sender closed at version %d", self._publisher.version)

    def __enter__(self) -> Sender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        states = ",".join(p.machine.state.value for p in self._hub.peers)
        return f"Sender(version={self.version}, receivers=[{states}], closed={self.closed})"


#: How long close() waits for the lock, and for a polling call to let go, before it closes without them:
#: a running call holds the lock for moments (it gives it up to wait), so a longer hold is a lock left held.


def close_when_all_gone(sender: Sender) -> None:
    """Makes `sender` close itself, from its helper thread, once every receiver that joined is gone.

    For weightsync.torchrl, whose trainer side is never shut down: nothing may outlive the workers.
    """
    sender._hub.on_all_gone = weakly(sender.close)


def release(sender: Sender) -> None:
    """Releases what `sender` holds as its collection would, without close(): no Stop, no thread joined.

    For interpreter exit (weightsync.torchrl's shutdown() while finalizing), where no thread may be joined.
    """
    sender._hub.finalizer()
