"""Bug: a `poll()` that is waiting when the sender's Stop (or the end of its channel) arrives raises
ClosedError instead of returning None. The implementer generalised the rule that `poll()` raises, once,
the violation that stopped the receiver (SM-R-7) to whatever stopped it during the call, and took
ClosedError for the error of "the sender closed" as `receiver.connect()` raises it when the sender
closed before the handshake. Only a receiver already known to be stopped when `poll()` is called (one
whose `stopped` was read after the channel ended) still gets None, from the check at the top of the call;
the poll that takes the Stop raises, be it waiting when the trainer's `close()` lands (the usual case for
`while not receiver.stopped: receiver.poll(timeout=1.0)`) or the first poll after it. The worker then
dies with ClosedError at every trainer shutdown instead of leaving its loop.

Breaks LIFE-7: "After Stop or end of the sender's channel, `receiver.stopped` is true, `poll()` returns
None and no version is applied."
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import receiver as _receiver
from weightsync.clock import Deadline
from weightsync.errors import FIX, ClosedError, LocalProtocolError, ReceiverError, RemoteProtocolError, SyncTimeoutError
from weightsync.messages import OK
from weightsync.rwlock import Cancelled, unlock

VIOLATES = ("LIFE-7",)


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
            if self._machine.stopped and not self._closing:  # BUG: what stopped it during this call is raised
                raise ClosedError(f"receiver {self.id}: the sender closed (Stop or end of channel) during poll()")
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


_receiver.Receiver.poll = poll
