"""Bug: in pull mode, `poll(timeout)` bounds only its wait for a version: once one has come, it waits for the
`reading()` blocks open in other threads without bound, as the push thread does. A pull worker whose inference
threads read the weights in long blocks (a batch of rollouts, an evaluation) and whose main loop calls
`poll(timeout=0.1)` between episodes "to pick up a version if there is one" is stalled until those blocks end. A
careful implementer could have written it from API-3's first sentence, "poll(timeout) applies the newest pending
version and returns it, or returns None when none came within timeout", reading the timeout as the wait for a
version to come, and sharing the push thread's "apply at the next safe point" step. Breaks API-3 ("timeout also
bounds its wait for reading() blocks in other threads: a version they hold back past it stays pending, poll()
returns None, and a later poll() applies it") and API-7 ("every wait it makes ... is bounded by its timeout").
"""
import weightsync  # noqa: F401
import weightsync.receiver as _receiver
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.clock import Deadline
from weightsync.errors import FIX, LocalProtocolError, ReceiverError, RemoteProtocolError, SyncTimeoutError
from weightsync.messages import OK
from weightsync.rwlock import Cancelled, unlock

VIOLATES = ("API-3", "API-7")


def poll(self, timeout=0.0):
    self._check_open()
    deadline = Deadline(timeout, self._clock)
    if self.mode != "pull":
        raise LocalProtocolError("poll() is for mode='pull'; push mode applies in the background")
    if self._machine.awaiting_init:
        raise LocalProtocolError(f"receiver {self.id}: call connect() before poll() (SM-R)")
    if self._lock.reading_here():
        raise LocalProtocolError("poll() inside reading() would change the weights being read (CONS-3)")
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
        try:
            # BUG: the version came; apply it at the next safe point, as the push thread does
            if not self._lock.acquire_write(Deadline(None, self._clock), lambda: self._closing):
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


_receiver.Receiver.poll = poll
