"""The receiver: maps the slots, applies versions at safe points, acks them (spec sections 6-7)."""

from __future__ import annotations

import logging
import os
import threading
from contextlib import contextmanager
from multiprocessing import connection
from types import MappingProxyType

import torch
from torch import nn

from . import layout, transport
from .slots import Mapped, map_slot
from .errors import ClosedError, ProtocolError, ReceiverError, SyncTimeoutError, WeightsMismatchError
from .protocol import (
    ERROR,
    OK,
    PROTOCOL_VERSION,
    RECEIVER_TABLE,
    Ack,
    Init,
    Ready,
    ReceiverState,
    Receive,
    Stop,
    message_event,
    step,
)
from .sender import Handle

log = logging.getLogger("weightsync")

_S = ReceiverState

#: How long close() waits for an apply in progress: well inside LIFE-5's 10 s bound.
_CLOSE_WAIT = 5.0


class _Cancelled(Exception):
    pass


class _ApplyLock:
    """Many readers or one applier; a waiting applier holds new readers back (CONS-2).

    Re-entrant for readers: a thread already inside reading() never waits.
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._waiting = 0
        self._local = threading.local()

    def reading_here(self) -> bool:
        return getattr(self._local, "depth", 0) > 0

    @contextmanager
    def read(self):
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            with self._cond:
                while self._writing or self._waiting:
                    self._cond.wait()
                self._readers += 1
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                with self._cond:
                    self._readers -= 1
                    self._cond.notify_all()

    @contextmanager
    def write(self, cancelled):
        with self._cond:
            self._waiting += 1
            try:
                while self._readers or self._writing:
                    if cancelled():
                        raise _Cancelled
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()


class Receiver:
    """Holds one version of the sender's weights in `target` (or in tensors of its own).

    mode="push" applies each new version from a background thread at a safe
    point (outside every `reading()` block); mode="pull" applies only inside
    `poll()`. With zero_copy=True the weights are read-only views of the
    sender's slot instead of copies (ZC-1..ZC-3).
    """

    def __init__(self, handle: Handle, target=None, *, mode: str = "push", zero_copy: bool = False):
        if not isinstance(handle, Handle):
            raise TypeError(f"expected a weightsync Handle from sender.handle(i), got {type(handle).__name__}")
        if mode not in ("push", "pull"):
            raise ValueError(f"mode must be 'push' or 'pull', got {mode!r}")
        if zero_copy and target is not None and not isinstance(target, nn.Module):
            raise ValueError("zero_copy=True needs target=None or an nn.Module, whose tensors it rebinds (ZC-1)")
        if handle.conn.closed:
            raise ProtocolError(f"handle({handle.receiver}) is closed; ask the sender for a new one (LIFE-2)")
        self.id = handle.receiver
        self.mode = mode
        self.zero_copy = zero_copy
        self._target = target
        # Our own copy of the descriptor: the handle's may be the sender's copy when
        # both live in one process, and the sender closes that one at connect.
        self._channel = transport.Channel(connection.Connection(os.dup(handle.conn.fileno())))
        handle.conn.close()
        self._state = _S.NEW
        self._version: int | None = None
        self._mapped: dict[int, Mapped] = {}
        self._stream = None  # the CUDA stream this receiver applies on (CUDA-3)
        self._views: dict[int, list[torch.Tensor]] = {}
        self._names: list[str] = []
        self._checker: layout.Checker | None = None
        self._own: list[torch.Tensor] | None = None
        self._own_bytes: torch.Tensor | None = None  # what _own views when it mirrors a CPU slot
        self._held: int | None = None
        self._received: int | None = None  # newest version told, applied or not (VER-3)
        self._lock = _ApplyLock()
        self._closing = False
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = os.pipe()
        self.failure: BaseException | None = None

    # ---- public binding ----------------------------------------------------

    @property
    def version(self) -> int | None:
        """The version the weights hold; None before connect or after a failed apply (ACK-6)."""
        return self._version

    @property
    def stopped(self) -> bool:
        """True exactly in states stopped, failed and closed: no version can come any more (SM-R-8).

        False before connect() and while live, also after an Ack(error), which a later
        version can repair (ACK-6).
        """
        return self._state in (_S.STOPPED, _S.CLOSED, _S.FAILED)

    @property
    def weights(self) -> MappingProxyType:
        """Name -> tensor of the version this receiver holds (read it inside reading() in push mode)."""
        if self._checker is None:
            raise ProtocolError("no weights before connect() (SM-R)")
        return MappingProxyType(dict(zip(self._names, self._current())))

    def connect(self, timeout: float | None = None) -> int:
        """Wait for Init, check the target, apply the current version, answer Ready (INIT-*).

        Every refusal is answered with Ready(error) before it is raised, so the sender's
        connect fails at once instead of waiting out its timeout: ProtocolError for
        another protocol or receiver id (INIT-2, MSG-2), WeightsMismatchError for a
        target that does not match (INIT-3), ReceiverError when applying failed (INIT-6).
        """
        self._check_open()
        if self._state is not _S.NEW:
            raise ProtocolError(f"receiver {self.id} is {self._state.value}; connect() is called once (SM-R)")
        deadline = transport.Deadline(timeout)
        try:
            if not self._channel.poll(deadline.left()):
                raise SyncTimeoutError(
                    [self.id], None, hint="no Init from the sender: did the trainer call sender.connect()?"
                )
            msg = self._channel.recv()
        except transport.ChannelClosed:
            self._state = step(RECEIVER_TABLE, self._state, "channel closed")
            raise ClosedError(f"receiver {self.id}: the sender is gone before the handshake") from None
        except ProtocolError as e:  # undecodable (MSG-3): stop and cut the channel (SM-R-7)
            self._broken(e)
            raise
        if isinstance(msg, Stop):
            self._state = step(RECEIVER_TABLE, self._state, "recv Stop")
            raise ClosedError(f"receiver {self.id}: the sender closed before the handshake")
        if not isinstance(msg, Init):
            try:
                step(RECEIVER_TABLE, self._state, message_event(msg), f"receiver {self.id}")
            except ProtocolError as e:
                self._broken(e)  # SM-R-7: stop and cut the channel
                raise
        try:
            self._map(msg.slots)
            self._bind(msg)
            self._apply(msg.version, msg.slot)
        except transport.ChannelClosed:
            self._state = step(RECEIVER_TABLE, self._state, "channel closed")
            raise ClosedError(f"receiver {self.id}: the sender is gone during the handshake") from None
        except (WeightsMismatchError, ProtocolError) as e:
            self._refuse(str(e))
            raise
        except Exception as e:  # noqa: BLE001 - whatever stopped the apply is reported (INIT-6)
            detail = f"{type(e).__name__}: {e}"
            self._refuse(detail)
            raise ReceiverError(
                [self.id], msg.version, {self.id: detail}, hint="the Init's version could not be applied (INIT-6)"
            ) from e
        self._received = msg.version
        if not self._send(Ready(self.id, msg.version, OK, holds_slot=self.zero_copy)):
            raise ClosedError(f"receiver {self.id}: the sender closed during the handshake")
        self._state = step(RECEIVER_TABLE, self._state, "recv Init(match)")
        if self.mode == "push":
            self._thread = threading.Thread(target=self._run, name=f"weightsync-receiver-{self.id}", daemon=True)
            self._thread.start()
        log.debug("receiver %d connected at version %d", self.id, msg.version)
        return msg.version

    @contextmanager
    def reading(self):
        """A block in which the weights do not change: push mode applies only outside it (CONS-2)."""
        self._check_open()
        with self._lock.read():
            yield self

    def poll(self, timeout: float | None = 0.0) -> int | None:
        """Pull mode: apply the newest pending version and return it, or None if none came (CONS-3)."""
        self._check_open()
        deadline = transport.Deadline(timeout)  # a negative timeout raises ValueError (section 10)
        if self.mode != "pull":
            raise ProtocolError("poll() is for mode='pull'; push mode applies in the background")
        if self._state is _S.NEW:
            raise ProtocolError(f"receiver {self.id}: call connect() before poll() (SM-R)")
        if self._lock.reading_here():
            raise ProtocolError("poll() inside reading() would change the weights being read (CONS-1)")
        if self.stopped:
            return None
        try:
            if not self._channel.poll(deadline.left()):
                return None
        except transport.ChannelClosed:
            self._state = step(RECEIVER_TABLE, self._state, "channel closed")
            return None
        try:
            msg = self._take()
        except ProtocolError as e:
            self._broken(e)
            raise
        if msg is None:
            return None
        with self._lock.write(lambda: self._closing):  # readers in other threads hold still (CONS-2)
            status, detail = self._apply_and_ack(msg)
        if status != OK:
            raise ReceiverError([self.id], msg.version, {self.id: detail})
        return msg.version

    def close(self) -> None:
        """Stop applying, close the channel, unmap the slots; idempotent (LIFE-5)."""
        if self._state is _S.CLOSED:
            return
        self._closing = True
        os.write(self._wake_w, b"x")
        self._lock.wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=_CLOSE_WAIT)
            if self._thread.is_alive():  # pragma: no cover - only a stuck torch copy could do this
                log.error("receiver %d: apply thread did not stop within %.0f s", self.id, _CLOSE_WAIT)
        self._channel.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
        if not self.zero_copy:
            self._views.clear()
        for mapped in self._mapped.values():
            mapped.close()
        self._mapped.clear()
        self._state = step(RECEIVER_TABLE, self._state, "close")

    @property
    def closed(self) -> bool:
        return self._state is _S.CLOSED

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Receiver(id={self.id}, mode={self.mode!r}, version={self._version}, state={self._state.value!r})"

    # ---- internals -----------------------------------------------------------

    def _check_open(self) -> None:
        if self._state is _S.CLOSED:
            raise ClosedError(f"receiver {self.id} is closed (LIFE-6)")

    def _refuse(self, detail: str) -> None:
        """Answer the Init with Ready(error, detail) and move to failed (SM-R-1)."""
        if self._send(Ready(self.id, None, ERROR, detail)):
            self._state = step(RECEIVER_TABLE, self._state, "recv Init(mismatch)")

    def _send(self, msg: object) -> bool:
        try:
            self._channel.send(msg)
            return True
        except transport.ChannelClosed:
            if self._state in (_S.NEW, _S.LIVE):
                self._state = step(RECEIVER_TABLE, self._state, "channel closed")
            return False

    def _map(self, slots) -> None:
        """Maps the slots a message describes; CPU slots' descriptors follow the message."""
        fds = iter(self._channel.recv_fds(sum(1 for s in slots if not s.ipc)))
        for info in slots:
            mapped = map_slot(info, None if info.ipc else next(fds))
            self._mapped[info.slot] = mapped
            if self._checker is not None:
                self._views[info.slot] = layout.views(mapped.tensor, self._checker.manifest)

    def _bind(self, init: Init) -> None:
        if init.protocol.split(".")[0] != PROTOCOL_VERSION.split(".")[0]:
            raise ProtocolError(f"sender speaks protocol {init.protocol}, this receiver {PROTOCOL_VERSION} (INIT-2)")
        if init.receiver != self.id:
            raise ProtocolError(f"Init for receiver {init.receiver} reached receiver {self.id} (MSG-2)")
        self._checker = layout.Checker(init.manifest)
        self._names = list(self._checker.names)
        for sid, mapped in self._mapped.items():
            self._views[sid] = layout.views(mapped.tensor, init.manifest)
        device = torch.device(init.manifest[0].device) if init.manifest else torch.device("cpu")
        if device.type == "cuda":
            self._stream = torch.cuda.Stream(device)
        if self._target is None:
            if not self.zero_copy:
                self._own = self._own_tensors(init)
        else:
            self._targets("INIT-3")  # raises WeightsMismatchError naming what differs

    def _own_tensors(self, init: Init) -> list[torch.Tensor]:
        """Tensors for a receiver without a target: views of one buffer laid out like a
        CPU slot, so that applying a version is one copy whatever the number of arrays."""
        slot = self._mapped[init.slot].tensor
        if slot.device.type == "cpu" and all(e.device == "cpu" for e in init.manifest):
            self._own_bytes = torch.empty_like(slot)
            return layout.views(self._own_bytes, init.manifest)
        return [torch.empty(e.shape, dtype=layout.dtype_of(e.dtype), device=e.device) for e in init.manifest]

    def _targets(self, rule: str = "ACK-7") -> list[torch.Tensor]:
        """The target's tensors in manifest order, checked as they are now (INIT-3, ACK-7).

        Read afresh on every call: the caller may have replaced a tensor or assigned its
        `.data`, and an apply must not write a target that no longer matches.
        """
        try:
            return self._checker.ordered(layout.flatten(self._target, detach=False), allow_grad=True)
        except WeightsMismatchError as e:
            raise WeightsMismatchError(f"the target of receiver {self.id}: {e} ({rule})") from None

    def _current(self) -> list[torch.Tensor]:
        if self._target is not None:
            return self._targets()
        if self.zero_copy:
            return self._views[self._held] if self._version is not None else []
        return self._own

    def _apply(self, version: int, sid: int) -> None:
        src = self._views[sid]
        mapped = self._mapped[sid]
        if self.zero_copy:
            mapped.ready()  # host waits for the sender's write of this slot (CUDA-2)
            if self._target is not None:
                for dst, view in zip(self._targets(), src):
                    dst.data = view
        else:
            dst = self._own if self._target is None else self._targets()
            if self._own_bytes is not None:  # set only without a target: dst views it
                self._own_bytes.copy_(mapped.tensor)
            elif self._stream is None:
                with torch.no_grad():
                    torch._foreach_copy_(dst, src)
            else:
                with torch.no_grad(), torch.cuda.stream(self._stream):
                    mapped.ready(self._stream)
                    torch._foreach_copy_(dst, src, non_blocking=True)
                self._stream.synchronize()  # the read ends before the ack frees the slot (CUDA-3)
        self._held = sid
        self._version = version

    def _apply_and_ack(self, msg: Receive) -> tuple[str, str]:
        status, detail = OK, ""
        try:
            self._apply(msg.version, msg.slot)
        except Exception as e:  # noqa: BLE001 - any failure is reported to the sender (ACK-6)
            self._version = None
            status, detail = ERROR, f"{type(e).__name__}: {e}"
            log.error("receiver %d could not apply version %d: %s", self.id, msg.version, detail)
        self._send(Ack(self.id, msg.version, status, detail))
        return status, detail

    def _take(self) -> Receive | None:
        """Read every ready message; the newest Receive wins, older ones are superseded (ACK-2)."""
        newest: Receive | None = None
        while True:
            try:
                msg = self._channel.recv()
            except transport.ChannelClosed:
                self._state = step(RECEIVER_TABLE, self._state, "channel closed")
                return None
            if isinstance(msg, Stop):
                self._state = step(RECEIVER_TABLE, self._state, "recv Stop")
                return None
            self._state = step(RECEIVER_TABLE, self._state, message_event(msg), f"receiver {self.id}")
            last = self._received
            if last is not None and msg.version <= last:
                raise ProtocolError(f"Receive of version {msg.version} after version {last} (VER-3)")
            self._map(msg.new_slots)
            if msg.slot not in self._views:
                raise ProtocolError(f"Receive names slot {msg.slot}, whose handle never came (SLOT-1)")
            self._received = msg.version
            newest = msg
            if not self._channel.poll(0):
                return newest

    def _run(self) -> None:
        try:
            while not self._closing:
                ready = transport.wait([self._channel, self._wake_r], None)
                if self._closing or self._wake_r in ready:
                    return
                msg = self._take()
                if msg is not None:
                    with self._lock.write(lambda: self._closing):
                        self._apply_and_ack(msg)
                if self.stopped:
                    return
        except _Cancelled:
            return
        except Exception as e:  # noqa: BLE001 - the thread must not die silently
            self._broken(e)

    def _broken(self, error: Exception) -> None:
        """A sender that broke the protocol: keep the error, stop, and cut the channel (SM-R-7)."""
        log.error("receiver %d stopped: %s", self.id, error)
        self._channel.close()
        if self._state in (_S.NEW, _S.LIVE):
            self._state = step(RECEIVER_TABLE, self._state, "channel closed")
        self.failure = error  # last: whoever sees it also sees `stopped`
