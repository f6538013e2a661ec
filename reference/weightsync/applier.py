"""A receiver's applying half: the version it holds, and what becomes of each version taken for it.

`Receiver` (receiver.py) is the public binding, and drives this base class: the
handshake, `reading()`, `poll()` and `close()` are there; here is what happens once
a version is taken (apply it under the write lock, answer, tell `on_apply`), the push
thread that takes them, the slots mapped for them, and the stop after a violation
(spec sections 7 and 9). They stay methods of the receiver object, not of a helper it
holds, because tests/mutants/ override them by name on Receiver subclasses.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

import torch

from . import apply, layout, limits, transport, wire
from .clock import Clock, Deadline
from .errors import RemoteProtocolError, clip
from .messages import ERROR, OK, Ack, Init, Receive, SlotInfo
from .pending import Pending
from .receiving import ReceiverMachine
from .rwlock import ApplyLock, Cancelled
from .slots import Mapped, map_slot

log = logging.getLogger("weightsync")


class Applier:
    """Receiver `rid`'s apply side over `channel` (None until a join by URL dials one).

    `_mapped` and `_views` hold each mapped slot (or network buffer) and the manifest's
    views of it; `_unmapped` the slots that could not be mapped, and why (ACK-6).
    """

    def __init__(self, rid: int, channel: transport.Channel | None, on_apply: Callable[[int], object] | None,
                 clock: Clock):
        self.id = rid
        self._channel = channel
        self._on_apply = on_apply  # told each version applied and acked ok (API-11)
        self._clock = clock
        self._machine = ReceiverMachine(rid)
        if self._channel is not None:
            self._channel.session.attach(self._machine)  # the session judges what arrives (section 4)
        self._version: int | None = None
        self._init: Init | None = None
        self._mapped: dict[int, Mapped] = {}
        self._views: dict[int, list[torch.Tensor]] = {}
        self._unmapped: dict[int, str] = {}  # slots whose handle could not be mapped, and why
        self._strategy: apply.Strategy | None = None
        self._pending: Pending | None = None  # where versions come from, once connected
        self._lock = ApplyLock()
        self._wlock = threading.Lock()  # one thread writes the channel at a time
        self._closing = False
        self.failure: BaseException | None = None
        self._unreported: BaseException | None = None  # a violation poll() has not raised yet

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

    def _map_buffer(self, b: int, tensor: torch.Tensor) -> None:
        """A network receive buffer, viewed as the manifest lays it out (NET-2); once per buffer."""
        if b not in self._mapped:
            assert self._init is not None, "buffers follow the Init"
            self._mapped[b] = Mapped(tensor)
            self._views[b] = layout.views(tensor, self._init.manifest)

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

    def _run(self) -> None:
        """Push mode: take each pending version and apply it at the next safe point (CONS-2)."""
        forever, pending = Deadline(None, self._clock), self._pending
        assert pending is not None, "the push thread starts once connected"
        try:
            while not self._closing and not self._machine.stopped:
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
