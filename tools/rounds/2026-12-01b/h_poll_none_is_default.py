"""Bug: `receiver.poll(timeout=None)` does not wait at all: it is taken as "no timeout given", that is
poll()'s default of 0, so it looks once and returns None when no version is pending. The implementer
normalised the argument as many Python APIs do (`None` meaning "use the default"), forgetting that
poll() is the one call whose default is not None and that section 10 makes None "wait without bound"
for every timeout of the binding. A pull worker that blocks for its next version with `poll(None)`
spins through None results instead (API-3: poll returns None only when none came within `timeout`).
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

from weightsync import receiver as _rm
from weightsync.clock import Deadline
from weightsync.errors import FIX, LocalProtocolError, ReceiverError, RemoteProtocolError, SyncTimeoutError
from weightsync.messages import OK
from weightsync.rwlock import Cancelled, unlock

VIOLATES = ("API-3",)


def poll(self, timeout=0.0):
    self._check_open()
    # BUG: None taken as "the default" (0) instead of "wait without bound".
    deadline = Deadline(timeout if timeout is not None else 0.0, self._clock)
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
            if failure is not None:
                raise failure
            return None
        try:
            if not self._lock.acquire_write(deadline, lambda: self._closing):
                pending.untake(msg)
                return None
        except Cancelled:
            return None
        status, detail = self._applier.apply_released(msg, pending)
    finally:
        if got_io:
            unlock(self._io)
    if status != OK:
        raise ReceiverError([self.id], msg.version, {self.id: detail},
                            hint=f"{FIX}fix what the detail names (the target, say): the next version applied repairs it")
    return msg.version


_rm.Receiver.poll = poll
