"""Bug: `poll()` called inside a `reading()` block of its own thread raises LocalProtocolError only when a version
is pending; when none is, it returns None. A worker that polls inside its read block (a policy step wrapped in
`with receiver.reading():` that calls `poll()` at its end) passes every test in which the trainer is idle and
fails only once versions flow, mid-episode, at the first poll that finds one: the misuse the spec wants caught at
once is caught late and intermittently. A careful implementer could have written it from CONS-3's parenthesis in
the reference ("poll() inside reading() would change the weights being read ... it would break CONS-1") and
CONS-2 (the apply waits while any block is open): the refusal guards the apply, which would wait on the caller's
own block, so it was put where the apply takes the write lock; a poll() with nothing to apply changes no weight
and reads as harmless. Breaks CONS-3 ("`poll()` inside `reading()` raises LocalProtocolError"; 8.4: "`poll()`
inside `reading()`" is a call illegal in the current state).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, receiver  # noqa: F401
from weightsync.clock import Deadline
from weightsync.errors import FIX, LocalProtocolError, ReceiverError, RemoteProtocolError, SyncTimeoutError
from weightsync.messages import OK
from weightsync.rwlock import Cancelled, unlock

VIOLATES = ("CONS-3",)


def poll(self, timeout=0.0):
    self._check_open()
    deadline = Deadline(timeout, self._clock)
    if self.mode != "pull":
        raise LocalProtocolError("poll() is for mode='pull'; push mode applies in the background")
    if self._machine.awaiting_init:
        raise LocalProtocolError(f"receiver {self.id}: call connect() before poll() (SM-R)")
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
        if self.stopped:
            self._applier.raise_unreported()
            return None
        try:
            msg = pending.take(deadline)
        except RemoteProtocolError as e:
            self._applier.broken(e, raised=True)
            raise
        if msg is None:
            self._applier.raise_unreported()
            return None
        if self._lock.reading_here():  # BUG: checked only once there is a version to apply
            pending.untake(msg)
            raise LocalProtocolError("poll() inside reading() would change the weights being read (CONS-3)")
        try:
            if not self._lock.acquire_write(deadline, lambda: self._closing):
                pending.untake(msg)
                return None
        except Cancelled:
            return None
        except BaseException:
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


receiver.Receiver.poll = poll
