"""The receiver: the handshake, then one applier over its source of pending versions.

Message rules live in protocol.ReceiverMachine (judged by the channel's session),
the apply lock in rwlock, the ways of applying in apply, where versions come from
in pending (the Unix channel or the network's data plane); this module is the
public binding around them: connect, map the slots, apply the newest version when
no reader is inside `reading()` (from the push thread or from poll()), answer
(spec sections 6, 7 and 9).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import MappingProxyType

import torch
from torch import nn

from . import apply, layout, limits, rendezvous, transport, wire
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
from .messages import ERROR, OK, Ack, Heartbeat, Init, Ready, Receive, SlotInfo, Stop
from .pending import ChannelPending, NetworkPending, Pending
from .protocol import ReceiverMachine, ReceiverState
from .rwlock import ApplyLock, Cancelled, unlock
from .slots import Mapped, map_slot
from .transport import Handle

log = logging.getLogger("weightsync")


_CLOSED_HANDLE = ("handle({}) is closed; ask the sender for a new one (LIFE-2). In the sender's own process, make the "
                  "Receiver before sender.connect(): the handle is the sender's copy, which connect() closes")


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
        self._on_apply = on_apply  # told each version applied and acked ok (API-11)
        self._clock = clock
        if zero_copy and target is not None and not isinstance(target, nn.Module):
            raise ValueError("zero_copy=True needs target=None or an nn.Module, whose tensors it rebinds (ZC-1)")
        self._url: str | None = None
        self._channel: transport.Channel | None = None
        if isinstance(handle, str):  # joins by URL at connect() (RDV-1)
            _, self.id, _ = rendezvous.parse_url(handle)
            self._url = handle
        elif isinstance(handle, Handle):
            if handle.closed:
                raise LocalProtocolError(_CLOSED_HANDLE.format(handle.receiver))
            if handle.given:
                raise LocalProtocolError(handle.given_away())
            if (why := handle.inherited()) is not None:
                raise LocalProtocolError(why)
            self.id = handle.receiver
            # Our own descriptor: the handle's may be the sender's copy when both live in
            # one process, and the sender closes that one at connect.
            try:
                sock = handle.conn.dup()
            except OSError:  # closed after the check above: the sender connected meanwhile
                raise LocalProtocolError(_CLOSED_HANDLE.format(handle.receiver)) from None
            handle.conn.close()
            self._channel = transport.Channel(sock, allowed=wire.FROM_SENDER, max_in=wire.MAX_TO_RECEIVER,
                                              takes_handles=True, now=clock)
        else:
            raise TypeError(f"expected sender.handle(i) or sender.url(i), got {type(handle).__name__}")
        self.mode = mode
        self.zero_copy = zero_copy
        self._target = target
        self._machine = ReceiverMachine(self.id)
        if self._channel is not None:
            self._channel.session.attach(self._machine)  # the session judges what arrives (section 4)
        self._version: int | None = None
        self._mapped: dict[int, Mapped] = {}
        self._views: dict[int, list[torch.Tensor]] = {}
        self._unmapped: dict[int, str] = {}  # slots whose handle could not be mapped, and why
        self._strategy: apply.Strategy | None = None
        self._init: Init | None = None
        self._pending: Pending | None = None  # where versions come from, once connected
        self._lock = ApplyLock()
        self._io = threading.Lock()  # one thread reads the channel at a time
        self._wlock = threading.Lock()  # one thread writes it at a time
        self._closing = False
        self._thread: threading.Thread | None = None
        self._wake = transport.WakePipe()  # close() wakes a poll() in another thread
        self.failure: BaseException | None = None
        self._unreported: BaseException | None = None  # a violation poll() has not raised yet

    # ---- public binding ----------------------------------------------------

    @property
    def version(self) -> int | None:
        """The version the weights hold; None before connect or after a failed apply (ACK-6)."""
        return self._version

    @property
    def stopped(self) -> bool:
        """True exactly in states stopped, failed and closed: no version can come any more (SM-R-8).

        A pull receiver looks at its channel here, without taking a message, so that a worker
        that polls rarely still sees the trainer close (LIFE-7)."""
        if self.mode == "pull" and self._machine.state is ReceiverState.LIVE:
            self._notice_end()
        return self._machine.stopped

    def _notice_end(self) -> None:
        channel = self._channel
        if channel is None or isinstance(self._pending, NetworkPending):  # the network's thread reads on its own
            return
        if not self._io.acquire(blocking=False):  # a poll() is reading: it sees the end itself
            return
        try:
            if self._machine.state is ReceiverState.LIVE and transport.hung_up(channel.sock):
                self._machine.channel_closed()
        finally:
            self._io.release()

    @property
    def closed(self) -> bool:
        """True once `close()` was called (LIFE-5)."""
        return self._machine.state is ReceiverState.CLOSED

    @property
    def weights(self) -> MappingProxyType[str, torch.Tensor]:
        """A read-only mapping name -> tensor of the version this receiver holds.

        In push mode, read it inside `reading()`, where it holds still.

        Raises:
            LocalProtocolError: before `connect()`.
        """
        strategy, init = self._strategy, self._init
        if strategy is None or init is None:
            raise LocalProtocolError("no weights before connect() (SM-R)")
        if self.zero_copy and self._version is None:
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
        if self._machine.state is not ReceiverState.NEW or self._init is not None:
            raise LocalProtocolError(f"receiver {self.id} is {self._machine.state.value}; connect() is called once")
        if self._channel is None:
            assert self._url is not None, "a receiver made without a channel joins by URL"
            try:
                self._channel, _ = rendezvous.dial(self._url, deadline)  # RDV-3; refusals raise RefusedError
                self._channel.session.attach(self._machine)
            except RemoteProtocolError as e:
                self._broken(e)
                raise
        try:
            while True:
                item = self._channel.recv(deadline)
                if item is None:
                    raise SyncTimeoutError([self.id], None, hint=f"no Init from the sender (INIT-5). {FIX}the trainer "
                                           "must call sender.connect() within this connect(): start it, or pass a "
                                           "longer timeout=")
                msg, fds = item
                self._machine.handle(msg)  # a Receive or a second Init here is SM-R-7
                if not isinstance(msg, Heartbeat):  # ignored in new as in live (MSG-4)
                    break
        except transport.ChannelClosed:
            self._machine.channel_closed()
            raise ClosedError(f"receiver {self.id}: the sender is gone before the handshake") from None
        except RemoteProtocolError as e:
            self._broken(e)
            raise
        if isinstance(msg, Stop):
            raise ClosedError(f"receiver {self.id}: the sender closed before the handshake")
        assert isinstance(msg, Init), "in state new the machine lets only Init and Stop through (SM-R-7)"
        self._init = msg
        buffer = msg.slot  # where the Init's version is: a slot, or a buffer filled by the data plane (NET-2)
        channel = self._channel
        net: NetworkPending | None = None
        try:
            self._machine.check_init(msg)  # INIT-2, MSG-2
            if msg.data_plane is not None:
                net = NetworkPending(channel, self._machine, msg, self.zero_copy, self._map_buffer, self._answer,
                                     self._broken, lambda: self._closing, self._wake.r)
                self._pending = net
                buffer = net.setup(deadline)
            else:
                self._map(msg.slots, fds)
                msg = self._init = _on_device(msg, self._mapped[buffer])
            made = msg if net is None else _on_target_device(msg, self._target, self.zero_copy)  # NET-7
            self._strategy = apply.make(self.id, made, self._target, self.zero_copy, {msg.slot: self._mapped[buffer]})
            self._apply(msg.version, buffer)
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
        caps = ("network",) if msg.data_plane is not None else ()
        if not self._answer(Ready(self.id, msg.version, OK, holds_slot=self.zero_copy, capabilities=caps), deadline):
            raise ClosedError(f"receiver {self.id}: the sender closed during the handshake")
        self._machine.accept_init(msg.version)
        self._applied(msg.version)
        if net is not None:
            net.start(buffer)
        else:
            self._pending = ChannelPending(channel, self._machine, self._map, lambda: self._closing, self._wake.r)
        if self.mode == "push":
            self._thread = threading.Thread(target=self._run, name=f"weightsync-receiver-{self.id}", daemon=True)
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
            strategy = self._strategy
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
        if self._machine.state is ReceiverState.NEW:
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
            if self.stopped or self._closing or pending is None:
                return None
            try:
                msg = pending.take(deadline)
            except RemoteProtocolError as e:
                self._broken(e)
                raise
            if msg is None:
                failure, self._unreported = self._unreported, None
                if failure is not None:  # SM-R-7: poll() raises the violation that stopped it, once
                    raise failure
                return None  # none came; and after Stop no version is applied (LIFE-7)
            try:
                if not self._lock.acquire_write(deadline, lambda: self._closing):
                    pending.untake(msg)  # readers in other threads held it past the timeout: still pending
                    return None
            except Cancelled:
                return None
            status, detail = self._apply_released(msg, pending)
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
            if self._strategy is not None and self._version is not None:
                self._strategy.detach()  # zero-copy: own copies before the sender may reuse the slot (LIFE-5)
            if self._channel is not None:
                self._channel.close()
            self._wake.close()
            self._views.clear()  # the slot views: zero-copy weights are own copies now (detach)
            while self._mapped:  # one at a time: a connect() in another thread may still be adding
                self._mapped.popitem()[1].close()
            self._machine.close()
        finally:
            # Not taken in time: a poll() that an exception interrupted left it held (LIFE-9); free it for good.
            unlock(self._io)

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Receiver(id={self.id}, mode={self.mode!r}, version={self._version}, "
                f"state={self._machine.state.value!r})")

    # ---- internals -----------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedError(f"receiver {self.id} is closed (LIFE-6)")

    def _answer(self, msg: object, deadline: Deadline | None = None) -> bool:
        """Sends an answer, waiting at most for the write bound; False when the sender is gone."""
        ch = self._channel
        assert ch is not None, "answers follow the Init, read from the channel"
        try:
            with self._wlock:  # the applier's answers and the network thread's heartbeats
                sent = ch.send_bounded(msg, deadline or Deadline(limits.WRITE_BOUND, self._clock))
            if sent:
                return True
            self._broken(RemoteProtocolError(f"the sender did not read its channel for {limits.WRITE_BOUND:g} s",
                                             state=self._machine.state.value, event="send", requirement="SEC-3"))
        except transport.ChannelClosed:
            self._machine.channel_closed()
        return False

    def _refuse(self, detail: str, deadline: Deadline) -> None:
        """Answer the Init with Ready(error, detail) and move to failed (SM-R-1)."""
        if self._answer(Ready(self.id, None, ERROR, clip(detail, wire.MAX_DETAIL // 4)), deadline):  # its remedy kept
            self._machine.refuse_init()

    def _map(self, slots: Iterable[SlotInfo], fds: list[int]) -> None:
        """Maps the slots a message introduces; CPU slots' handles came with it, in list order (WIRE-4)."""
        init, handles = self._init, iter(fds)
        for info in slots:
            assert init is not None, "connect() keeps the Init before it maps the Init's slots"
            fd = None if info.ipc else next(handles)
            try:
                mapped = map_slot(info, fd)
            except Exception as e:  # noqa: BLE001 - an apply from this slot will say why (ACK-6)
                self._unmapped[info.slot] = f"slot {info.slot} could not be mapped: {type(e).__name__}: {e}"
                if info in init.slots:
                    raise
                continue
            assert mapped.tensor is not None, "mapped just now"
            self._mapped[info.slot] = mapped
            self._views[info.slot] = layout.views(mapped.tensor, init.manifest)

    def _apply(self, version: int, sid: int) -> None:
        if sid in self._unmapped:
            raise RuntimeError(self._unmapped[sid])
        strategy = self._strategy
        assert strategy is not None, "connect() makes the strategy before the first apply"
        strategy.apply(self._views[sid], self._mapped[sid])
        self._version = version

    def _apply_and_ack(self, msg: Receive) -> tuple[str, str]:
        status, detail = OK, ""
        try:
            self._apply(msg.version, msg.slot)
        except Exception as e:  # noqa: BLE001 - any failure is reported to the sender (ACK-6)
            self._version = None
            status, detail = ERROR, clip(f"{type(e).__name__}: {e}", wire.MAX_DETAIL // 4)
            log.error("receiver %d could not apply version %d: %s", self.id, msg.version, detail)
        self._answer(Ack(self.id, msg.version, status, detail))
        return status, detail

    def _apply_released(self, msg: Receive, pending: Pending) -> tuple[str, str]:
        """Applies a taken version with the write lock held, then releases both (the lock and the version)."""
        status, detail = ERROR, "the apply did not finish"
        try:
            status, detail = self._apply_and_ack(msg)
        finally:
            self._lock.release_write()
            pending.applied(msg, status == OK)
        if status == OK:
            self._applied(msg.version)
        return status, detail

    def _applied(self, version: int) -> None:
        """on_apply(version), outside the apply's lock; what it raises is the caller's, logged (API-11)."""
        if self._on_apply is not None:
            try:
                self._on_apply(version)
            except Exception:  # noqa: BLE001
                log.exception("receiver %d: on_apply(%d) raised", self.id, version)

    def _map_buffer(self, b: int, tensor: torch.Tensor) -> None:
        """A network receive buffer, viewed as the manifest lays it out (NET-2); once per buffer."""
        if b not in self._mapped:
            assert self._init is not None, "buffers follow the Init"
            self._mapped[b] = Mapped(tensor)
            self._views[b] = layout.views(tensor, self._init.manifest)

    def _run(self) -> None:
        """Push mode: take each pending version and apply it at the next safe point (CONS-2)."""
        forever, pending = Deadline(None, self._clock), self._pending
        assert pending is not None, "the push thread starts once connected"
        try:
            while not self._closing and not self.stopped:
                msg = pending.take(forever)
                if msg is None:
                    continue
                self._lock.acquire_write(forever, lambda: self._closing)
                self._apply_released(msg, pending)
        except Cancelled:
            return
        except Exception as e:  # noqa: BLE001 - the thread must not die silently
            self._broken(e)

    def _broken(self, error: Exception) -> None:
        """A sender that broke the protocol: keep the error, stop, and cut the channel (SM-R-7)."""
        if isinstance(error, RemoteProtocolError) and not error.state:
            error.state = self._machine.state.value
        log.error("receiver %d stopped: %s", self.id, error)
        if self._channel is not None:
            self._channel.close()
        self._machine.channel_closed()
        self._unreported = error if isinstance(error, RemoteProtocolError) else None
        self.failure = error  # last: whoever sees it also sees `stopped`


def _on_device(init: Init, slot: Mapped) -> Init:
    """The Init with its manifest on the device this process mapped the slot on (CUDA-1).

    The sender names its own index; under another CUDA_VISIBLE_DEVICES the same GPU
    has another index here, and a target is checked against this one.
    """
    device = slot.tensor.device if slot.tensor is not None else None
    if device is None or device.type != "cuda" or all(e.device == str(device) for e in init.manifest):
        return init
    return dataclasses.replace(init, manifest=tuple(dataclasses.replace(e, device=str(device)) for e in init.manifest))


def _on_target_device(init: Init, target: layout.Weights | None, zero_copy: bool) -> Init:
    """A network Init's manifest on the device of a copying receiver's target (NET-7).

    The network carries host memory, so the manifest names the CPU; a target on one GPU
    is checked against the rest of the manifest and each apply copies into it. A target
    on several devices, or one whose tensors cannot be read, is left to the check, which
    names what differs; a zero-copy receiver's target must be on the CPU.
    """
    if target is None or zero_copy:
        return init
    try:
        devices = {t.device for t in layout.flatten(target, detach=False).values()}
    except Exception:  # noqa: BLE001 - not weights: the strategy's check says so (INIT-3)
        return init
    if len(devices) != 1 or next(iter(devices)).type not in ("cpu", "cuda"):
        return init
    device = str(next(iter(devices)))
    if all(e.device == device for e in init.manifest):
        return init
    return dataclasses.replace(init, manifest=tuple(dataclasses.replace(e, device=device) for e in init.manifest))
