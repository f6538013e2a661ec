"""The receiver's public binding: connect, reading(), poll(), close() (spec sections 6, 7 and 9).

Message rules live in receiving.ReceiverMachine (judged by the channel's session), the
apply lock in rwlock, the ways of applying in apply, where versions come from in pending
(the Unix channel or the network's data plane), the steps before the Init in handshake,
the manifest's device in devices; what becomes of each version taken (apply, answer,
on_apply, the push thread) is applier's `Applier`, which `Receiver` holds. Here:
connect, map the Init's slots, apply the newest version when no reader is inside
`reading()` (from the push thread or from poll()).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import MappingProxyType

import torch
from torch import nn

from . import apply, devices, handshake, layout, limits, rendezvous, transport, wire
from .applier import Applier
from .clock import Clock, Deadline, monotonic
from .errors import (
    FIX,
    ClosedError,
    LocalProtocolError,
    ReceiverError,
    RemoteProtocolError,
    SyncTimeoutError,
    WeightsMismatchError,
    clip,
)
from .messages import ERROR, OK, Ready
from .pending import SOURCES, Pending
from .receiving import ReceiverMachine
from .rwlock import ApplyLock, Cancelled, unlock
from .transport import Handle

log = logging.getLogger("weightsync")


class Receiver:
    """Holds one version of the sender's weights in `target` (or in tensors of its own).

    `mode="push"` applies each new version from a background thread, between two
    `reading()` blocks; `mode="pull"` applies only inside `poll()`. With `zero_copy=True`
    the weights are read-only views of the sender's slot instead of copies. Use it as a
    context manager: leaving the block calls `close()`.

    Args:
        handle: `sender.handle(i)`, passed to this process once, or the URL `sender.url(i)`.
        target: where the weights go: an `nn.Module`, a TensorDict, a mapping name -> tensor
            or what `pack()` returned, matching the sender's names, dtypes, shapes and slot
            device; None (the default) keeps tensors of the receiver's own.
        mode: "push" (the default) or "pull".
        zero_copy: view the sender's slot instead of copying; `target` must be None or an
            `nn.Module`. Default False.
        on_apply: called with each version applied and acked, in the thread that applied
            it, outside the apply's lock. Default None.
        clock: what every timer of this receiver reads (the lease, heartbeats, the frame
            bound, each call's timeout): the monotonic clock unless a test moves time on by
            hand (`weightsync.clock.ShiftedClock`).

    Attributes:
        failure (BaseException | None): the error that stopped a push receiver (its apply
            thread), or None.

    Raises:
        ValueError: a bad mode, a zero-copy target that is not a module, or a malformed URL.
        LocalProtocolError: a handle consumed by connect(), already given to another
            process, or inherited by fork.
        TypeError: neither a handle nor a URL, or an `on_apply` that is not callable.
    """

    def __init__(self, handle: Handle | str, target: layout.Weights | None = None, *, mode: str = "push",
                 zero_copy: bool = False, on_apply: Callable[[int], object] | None = None,
                 clock: Clock = monotonic):
        if mode not in ("push", "pull"):
            raise ValueError(f"mode must be 'push' or 'pull', got {mode!r}")
        if on_apply is not None and not callable(on_apply):
            raise TypeError(f"on_apply must be callable, got {type(on_apply).__name__}")
        if zero_copy and target is not None and not isinstance(target, nn.Module):
            raise ValueError("zero_copy=True needs target=None or an nn.Module, whose tensors it rebinds (ZC-1)")
        url: str | None = None
        channel: transport.Channel | None = None
        if isinstance(handle, str):  # joins by URL at connect() (RDV-1)
            _, rid, _ = rendezvous.parse_url(handle)
            url = handle
        elif isinstance(handle, Handle):
            channel = handshake.open_handle(handle, clock)
            rid = handle.receiver
        else:
            raise TypeError(f"expected sender.handle(i) or sender.url(i), got {type(handle).__name__}")
        self.id, self.mode, self.zero_copy = rid, mode, zero_copy
        self._url, self._target, self._clock = url, target, clock
        self._machine, self._lock = ReceiverMachine(rid), ApplyLock()
        if channel is not None:
            channel.session.attach(self._machine)  # the session judges what arrives (section 4)
        self._closing = False
        self._applier = Applier(rid, channel, self._machine, self._lock, on_apply, clock, lambda: self._closing)
        self._pending: Pending | None = None  # where versions come from, once connected
        self._io = threading.Lock()  # one thread reads the channel at a time
        self._thread: threading.Thread | None = None
        self._wake = transport.WakePipe()  # close() wakes a poll() in another thread

    # ---- public binding ----------------------------------------------------

    @property
    def version(self) -> int | None:
        """The version the weights hold; None before connect or after a failed apply (ACK-6)."""
        return self._applier.version

    @property
    def failure(self) -> BaseException | None:
        """The error that stopped a push receiver (its apply thread), or None."""
        return self._applier.failure

    @property
    def stopped(self) -> bool:
        """True exactly in states stopped, failed and closed: no version can come any more (SM-R-8).

        A pull receiver looks at its channel here, without taking a message, so that a worker
        that polls rarely still sees the trainer close (LIFE-7)."""
        if self.mode == "pull" and self._machine.live:
            self._notice_end()
        return self._machine.stopped

    def _notice_end(self) -> None:
        channel = self._applier.channel
        if channel is None or self._machine.profile.leased:  # a leased channel's own thread reads it (NET-4)
            return
        if not self._io.acquire(blocking=False):  # a poll() is reading: it sees the end itself
            return
        try:
            if self._machine.live and transport.hung_up(channel.sock):
                self._machine.channel_closed()
        finally:
            self._io.release()

    @property
    def closed(self) -> bool:
        """True once `close()` was called (LIFE-5)."""
        return self._machine.closed

    @property
    def weights(self) -> MappingProxyType[str, torch.Tensor]:
        """A read-only mapping name -> tensor of the version this receiver holds.

        In push mode, read it inside `reading()`, where it holds still.

        Raises:
            LocalProtocolError: before `connect()`.
        """
        strategy, init = self._applier.strategy, self._applier.init
        if strategy is None or init is None:
            raise LocalProtocolError("no weights before connect() (SM-R)")
        if self.zero_copy and self._applier.version is None:
            return MappingProxyType({})  # no version held: nothing to view (ACK-6)
        names = [e.name for e in init.manifest]
        return MappingProxyType(dict(zip(names, strategy.current())))

    def connect(self, timeout: float | None = None) -> int:
        """Wait for Init, check the target, apply the current version, answer Ready (INIT-*).

        `timeout` bounds the whole handshake (INIT-5). Every refusal is answered with
        Ready(error) before it is raised, so the sender's connect fails at once.

        Args:
            timeout: seconds for the whole handshake, the join by URL included; None (the
                default) waits without bound.

        Returns:
            The version applied: the sender's latest.

        Raises:
            WeightsMismatchError: the target does not match the sender's weights.
            RemoteProtocolError: another protocol major version, or another receiver id.
            ReceiverError: applying the version failed.
            RefusedError: a join by URL the sender refused.
            SyncTimeoutError: no Init in time.
            ClosedError: the sender closed first, or this receiver is closed.
        """
        self._check_open()
        deadline = Deadline(timeout, self._clock)
        applier = self._applier
        if not self._machine.awaiting_init or applier.init is not None:
            raise LocalProtocolError(f"receiver {self.id} is {self._machine.state.value}; connect() is called once")
        if applier.channel is None:
            assert self._url is not None, "a receiver made without a channel joins by URL"
            try:
                applier.channel, _ = rendezvous.dial(self._url, deadline)  # RDV-3; refusals raise RefusedError
                applier.channel.session.attach(self._machine)
            except RemoteProtocolError as e:
                applier.broken(e)
                raise
        channel = applier.channel
        try:
            msg, fds = handshake.await_init(channel, self._machine, deadline)
        except RemoteProtocolError as e:
            applier.broken(e)
            raise
        applier.init = msg
        profile = self._machine.profile  # chosen by the machine from the Init (NET-1)
        try:
            self._machine.check_init(msg)  # INIT-2, MSG-2
            pending = self._pending = SOURCES[type(profile)](channel, self._machine, msg, self.zero_copy, applier,
                                                             lambda: self._closing, self._wake.r)
            buffer = pending.setup(fds, deadline)  # where the Init's version is: a slot, or a data-plane buffer
            msg = applier.init  # a GPU slot's Init names this process's index of the device (CUDA-1)
            device = devices.target_device(self._target, self.zero_copy) if profile.host_memory else None  # NET-7
            made = msg if device is None else devices.with_device(msg, device)
            applier.strategy = apply.make(self.id, made, self._target, self.zero_copy, {msg.slot: applier.mapped[buffer]})
            applier.apply(msg.version, buffer)
        except (WeightsMismatchError, RemoteProtocolError) as e:
            self._refuse(str(e), deadline)
            raise
        except Exception as e:  # noqa: BLE001 - whatever stopped the apply is reported (INIT-6)
            detail = f"{type(e).__name__}: {e}"
            self._refuse(detail, deadline)
            raise ReceiverError(
                [self.id], msg.version, {self.id: detail}, hint=f"the Init's version could not be applied (INIT-6). "
                f"{FIX}fix what the detail names, then make a new Receiver(...) from a new sender.handle(i) or the URL"
            ) from e
        ready = Ready(self.id, msg.version, OK, holds_slot=self.zero_copy, capabilities=profile.capabilities)
        if not applier.answer(ready, deadline):
            raise ClosedError(f"receiver {self.id}: the sender closed during the handshake")
        self._machine.accept_init(msg.version)
        applier.applied(msg.version)
        pending.start(buffer)
        if self.mode == "push":
            self._thread = threading.Thread(target=applier.run, args=(self._pending,),
                                            name=f"weightsync-receiver-{self.id}", daemon=True)
            self._thread.start()
        log.debug("receiver %d connected at version %d", self.id, msg.version)
        return msg.version

    @contextmanager
    def reading(self, timeout: float | None = None) -> Iterator[Receiver]:
        """A block in which the weights do not change: `with receiver.reading(): ...` (CONS-2).

        Applies wait until the block ends; entering it waits while an apply runs or waits
        to run.

        Args:
            timeout: seconds to wait for that apply; None (the default) waits without bound.
                After it, the block does not run.

        Returns:
            ContextManager[Receiver]: use it in a `with` statement.

        Raises:
            SyncTimeoutError: an apply held the weights past `timeout`.
            ClosedError: the receiver is closed.
        """
        self._check_open()
        try:
            cm = self._lock.read(Deadline(timeout, self._clock))
            cm.__enter__()
        except TimeoutError:
            raise SyncTimeoutError([self.id], None, hint=f"an apply held the weights past the timeout. {FIX}pass "
                                   "reading() a longer timeout=") from None
        try:
            yield self
        finally:
            strategy = self._applier.strategy
            try:
                if strategy is not None:
                    strategy.fence.record()  # an apply waits for the GPU work queued in this block (CUDA-3)
            finally:
                cm.__exit__(None, None, None)

    def poll(self, timeout: float | None = 0.0) -> int | None:
        """Pull mode: apply the newest pending version and return it, or None if none came (CONS-3).

        A version that readers in other threads hold back past `timeout`, inside their
        `reading()` blocks, stays pending, and the next poll() applies it.

        Args:
            timeout: seconds to wait for a version and for readers in other threads; 0 (the
                default) does not wait; None waits without bound.

        Returns:
            The version applied, or None.

        Raises:
            ReceiverError: the apply failed (the sender's send fails too), or the target no
                longer matches the sender's weights.
            LocalProtocolError: a push receiver, before connect(), or inside `reading()`.
            SyncTimeoutError: another thread is polling.
            ClosedError: the receiver is closed.
        """
        self._check_open()
        deadline = Deadline(timeout, self._clock)  # a negative timeout raises ValueError (section 10)
        if self.mode != "pull":
            raise LocalProtocolError("poll() is for mode='pull'; push mode applies in the background")
        if self._machine.awaiting_init:
            raise LocalProtocolError(f"receiver {self.id}: call connect() before poll() (SM-R)")
        if self._lock.reading_here():
            raise LocalProtocolError("poll() inside reading() would change the weights being read (CONS-3: it would break CONS-1)")
        left = deadline.left()
        got_io = False
        try:
            got_io = self._io.acquire(timeout=-1 if left is None else left)
            if not got_io:
                raise SyncTimeoutError([self.id], None, hint=f"another thread is polling this receiver. {FIX}poll "
                                       "from one thread, or pass poll() a longer timeout=")
            pending = self._pending
            if self._closing or pending is None:
                return None
            if self.stopped:  # a violation read between calls (a network receiver's own thread) is raised here
                self._applier.raise_unreported()
                return None
            try:
                msg = pending.take(deadline)
            except RemoteProtocolError as e:
                self._applier.broken(e, raised=True)
                raise
            if msg is None:
                self._applier.raise_unreported()
                return None  # none came; and after Stop no version is applied (LIFE-7)
            try:
                if not self._lock.acquire_write(deadline, lambda: self._closing):
                    pending.untake(msg)  # readers in other threads held it past the timeout: still pending
                    return None
            except Cancelled:
                return None
            except BaseException:  # an interrupt in that wait leaves it pending, as the timeout does (LIFE-9)
                pending.untake(msg)
                raise
            status, detail = self._applier.apply_released(msg, pending)
        finally:
            if got_io:
                unlock(self._io)
        if status != OK:
            raise ReceiverError([self.id], msg.version, {self.id: detail},
                                hint=f"{FIX}fix what the detail names (the target, say): the next version applied repairs it")
        return msg.version

    def close(self) -> None:
        """Stop applying, close the channel, unmap the slots; idempotent (LIFE-5)."""
        if self.closed:
            return
        self._closing = True
        self._wake.wake()
        self._lock.wake()
        bound = Deadline(0.9 * limits.REACTION_BOUND, self._clock)  # one bound for every wait of close() (LIFE-5)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            try:
                thread.join(timeout=bound.cap(limits.CLOSE_WAIT))
            except RuntimeError:  # connect() in another thread is starting it: it sees _closing and ends
                pass
            if thread.is_alive():  # pragma: no cover - only a stuck torch copy could do this
                log.error("receiver %d: apply thread did not stop within %.0f s", self.id, limits.CLOSE_WAIT)
        if self._pending is not None:
            self._pending.close(bound)
        self._io.acquire(timeout=bound.left() or 0.0)  # a poll() elsewhere leaves its wait first
        try:
            self._applier.release()
            self._wake.close()
            self._machine.close()
        finally:
            # Not taken in time: a poll() that an exception interrupted left it held (LIFE-9); free it for good.
            unlock(self._io)

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Receiver(id={self.id}, mode={self.mode!r}, version={self._applier.version}, "
                f"state={self._machine.state.value!r})")

    # ---- internals -----------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedError(f"receiver {self.id} is closed (LIFE-6)")

    def _refuse(self, detail: str, deadline: Deadline) -> None:
        """Answer the Init with Ready(error, detail) and move to failed (SM-R-1)."""
        if self._applier.answer(Ready(self.id, None, ERROR, clip(detail, wire.MAX_DETAIL // 4)), deadline):  # its remedy kept
            self._machine.refuse_init()
