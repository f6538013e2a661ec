"""Bug: in pull mode, `poll()` calls `on_apply(version)` itself, in the caller's thread, and lets an
exception from it propagate: the implementer wrapped the hook in try/except/log where the binding's own
thread calls it (the push thread must not die, and the Init's call in connect() goes through the same
wrapper), and reasoned that in pull mode the hook is a plain synchronous callback of the caller's own
call, whose errors are the caller's to see, as a key function's are in `sorted()`. So a worker whose hook
raises (a metrics client that lost its connection, say) gets that exception out of `poll()` although the
version was applied and acked ok: its loop takes the poll for a failed one (or dies), and the version
`poll()` applied is never returned to it.

Breaks API-11: "`Receiver(..., on_apply=fn)` calls `fn(version)` ... An exception from `fn` is logged and
changes nothing else." (and API-3: `poll()` returns the version it applied).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import receiver as _receiver
from weightsync.clock import Deadline
from weightsync.errors import FIX, LocalProtocolError, ReceiverError, RemoteProtocolError, SyncTimeoutError
from weightsync.messages import OK
from weightsync.rwlock import Cancelled, unlock

VIOLATES = ("API-11",)


def poll(self, timeout=0.0):
    self._check_open()
    deadline = Deadline(timeout, self._clock)
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
        if self.stopped or self._closing or pending is None:
            return None
        try:
            msg = pending.take(deadline)
        except RemoteProtocolError as e:
            self._applier.broken(e)
            raise
        if msg is None:
            failure, self._applier.unreported = self._applier.unreported, None
            if failure is not None:  # SM-R-7: poll() raises the violation that stopped it, once
                raise failure
            return None
        try:
            if not self._lock.acquire_write(deadline, lambda: self._closing):
                pending.untake(msg)
                return None
        except Cancelled:
            return None
        applier = self._applier
        status, detail = "error", "the apply did not finish"
        try:
            status, detail = applier._apply_and_ack(msg)
        finally:
            self._lock.release_write()
            pending.applied(msg, status == OK)
    finally:
        if got_io:
            unlock(self._io)
    if status != OK:
        raise ReceiverError([self.id], msg.version, {self.id: detail},
                            hint=f"{FIX}fix what the detail names (the target, say): the next version applied repairs it")
    if applier._on_apply is not None:
        applier._on_apply(msg.version)  # BUG: called directly in the caller's thread, its exception not caught
    return msg.version


_receiver.Receiver.poll = poll
