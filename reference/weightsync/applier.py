"""A receiver's applying half: what becomes of each version taken for it (spec sections 7 and 9).

`Receiver` (receiver.py) is the public binding and holds one `Applier`, built with
what it needs: the receiver's machine, apply lock, clock, `on_apply` and whether it is
closing. The Applier answers on the channel, maps slots, applies a version under the
write lock, answers, tells `on_apply`, runs the push thread, and stops the receiver
after a violation. What connect() learns (the channel, the Init, the strategy) the
receiver hands it here, and reads back from it the version held and any failure.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

import torch

from . import apply, layout, limits, transport, wire
from .clock import Clock, Deadline
from .errors import LocalProtocolError, RemoteProtocolError, clip
from .messages import ERROR, OK, Ack, Init, Receive, SlotInfo
from .pending import Pending
from .receiving import ReceiverMachine
from .rwlock import ApplyLock, Cancelled
from .slots import Mapped, map_slot

log = logging.getLogger("weightsync")


class Applier:
    """Receiver `rid`'s apply side, answering over `channel` (None until a join by URL dials one).

    `machine` and `lock` are the receiver's own, `closing()` says whether its close() began.
    `channel`, `init` and `strategy` are set by the receiver as connect() learns them;
    `version`, the slots `mapped` and their manifest `views`, `failure` and `unreported`
    are what this side keeps for it.
    """

    def __init__(self, rid: int, channel: transport.Channel | None, machine: ReceiverMachine, lock: ApplyLock,
                 on_apply: Callable[[int], object] | None, clock: Clock, closing: Callable[[], bool]):
        self.id = rid
        self.channel = channel
        self._machine, self._lock, self._clock, self._closing = machine, lock, clock, closing
        self._on_apply = on_apply  # told each version applied and acked ok (API-11)
        self.version: int | None = None
        self.init: Init | None = None
        self.strategy: apply.Strategy | None = None
        self.mapped: dict[int, Mapped] = {}
        self.views: dict[int, list[torch.Tensor]] = {}
        self._unmapped: dict[int, str] = {}  # slots whose handle could not be mapped, and why (ACK-6)
        self._wlock = threading.Lock()  # one thread writes the channel at a time
        self.failure: BaseException | None = None
        self.unreported: BaseException | None = None  # a violation poll() has not raised yet

    def raise_unreported(self) -> None:
        """Raises the violation that stopped this receiver if poll() has not raised it yet: once (SM-R-7)."""
        failure, self.unreported = self.unreported, None
        if failure is not None:
            raise failure

    def answer(self, msg: object, deadline: Deadline | None = None) -> bool:
        """Sends an answer, waiting at most for the write bound; False when the sender is gone."""
        ch = self.channel
        assert ch is not None, "answers follow the Init, read from the channel"
        try:
            with self._wlock:  # the applier's answers and the network thread's heartbeats
                sent = ch.send_bounded(msg, deadline or limits.WRITE_BOUND)
            if sent:
                return True
            self.broken(RemoteProtocolError(f"the sender did not read its channel for {limits.WRITE_BOUND:g} s",
                                            state=self._machine.state.value, event="send", requirement="SEC-3"))
        except transport.ChannelClosed:
            self._machine.channel_closed()
        except LocalProtocolError:  # close() in another thread closed the machine before the channel's check
            if not (self._closing() or ch.closed):
                raise
        return False

    def release(self) -> None:
        """At close, with the apply thread ended: zero-copy weights become own copies before the sender may reuse
        their slot (LIFE-5), then the channel closes and every slot is unmapped."""
        if self.strategy is not None and self.version is not None:
            self.strategy.detach()
        if self.channel is not None:
            self.channel.close()
        self.views.clear()  # the slot views: zero-copy weights are own copies now (detach)
        while self.mapped:  # one at a time: a connect() in another thread may still be adding
            self.mapped.popitem()[1].close()

    def map(self, slots: Iterable[SlotInfo], fds: list[int]) -> None:
        """Maps the slots a message introduces; CPU slots' handles came with it, in list order (WIRE-4)."""
        init, handles = self.init, iter(fds)
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
            self.mapped[info.slot] = mapped
            self.views[info.slot] = layout.views(mapped.tensor, init.manifest)

    def map_buffer(self, b: int, tensor: torch.Tensor) -> None:
        """A network receive buffer, viewed as the manifest lays it out (NET-2); once per buffer."""
        if b not in self.mapped:
            assert self.init is not None, "buffers follow the Init"
            self.mapped[b] = Mapped(tensor)
            self.views[b] = layout.views(tensor, self.init.manifest)

    def apply(self, version: int, sid: int) -> None:
        """Copies (or views) slot `sid` into the target; the caller holds the write lock or is connecting."""
        if sid in self._unmapped:
            raise RuntimeError(self._unmapped[sid])
        strategy = self.strategy
        assert strategy is not None, "connect() makes the strategy before the first apply"
        strategy.apply(self.views[sid], self.mapped[sid])
        self.version = version

    def _apply_and_ack(self, msg: Receive) -> tuple[str, str]:
        status, detail = OK, ""
        try:
            self.apply(msg.version, msg.slot)
        except Exception as e:  # noqa: BLE001 - any failure is reported to the sender (ACK-6)
            self.version = None
            status, detail = ERROR, clip(f"{type(e).__name__}: {e}", wire.MAX_DETAIL // 4)
            log.error("receiver %d could not apply version %d: %s", self.id, msg.version, detail)
        self.answer(Ack(self.id, msg.version, status, detail))
        return status, detail

    def apply_released(self, msg: Receive, pending: Pending) -> tuple[str, str]:
        """Applies a taken version with the write lock held, then releases both (the lock and the version)."""
        status, detail = ERROR, "the apply did not finish"
        try:
            status, detail = self._apply_and_ack(msg)
        finally:
            self._lock.release_write()
            pending.applied(msg, status == OK)
        if status == OK:
            self.applied(msg.version)
        return status, detail

    def applied(self, version: int) -> None:
        """on_apply(version), outside the apply's lock; what it raises is the caller's, logged (API-11)."""
        if self._on_apply is not None:
            try:
                self._on_apply(version)
            except Exception:  # noqa: BLE001
                log.exception("receiver %d: on_apply(%d) raised", self.id, version)

    def run(self, pending: Pending) -> None:
        """Push mode: take each pending version and apply it at the next safe point (CONS-2)."""
        forever = Deadline(None, self._clock)
        try:
            while not self._closing() and not self._machine.stopped:
                msg = pending.take(forever)
                if msg is None:
                    continue
                self._lock.acquire_write(forever, self._closing)
                self.apply_released(msg, pending)
        except Cancelled:
            return
        except Exception as e:  # noqa: BLE001 - the thread must not die silently
            self.broken(e)

    def broken(self, error: Exception, *, raised: bool = False) -> None:
        """A sender that broke the protocol: keep the error, stop, and cut the channel (SM-R-7).

        `raised`: the caller raises it to the user itself, so poll() does not raise it again.
        The cut comes last: a sender that sees the channel end may ask `stopped` at once."""
        if isinstance(error, RemoteProtocolError) and not error.state:
            error.state = self._machine.state.value
        log.error("receiver %d stopped: %s", self.id, error)
        self.unreported = error if isinstance(error, RemoteProtocolError) and not raised else None
        self._machine.channel_closed()
        self.failure = error  # after `stopped`: whoever sees it also sees `stopped`
        if self.channel is not None:
            self.channel.close()
