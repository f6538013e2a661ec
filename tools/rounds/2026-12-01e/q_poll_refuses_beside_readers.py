"""Bug: in pull mode, `poll()` raises LocalProtocolError ("poll() inside reading() ...") whenever any thread is
inside a `reading()` block, not only when the calling thread is. A worker whose inference threads read the weights
inside `reading()` while its main thread polls between episodes gets an exception from poll() each time their
blocks overlap, instead of poll() waiting (bounded by its timeout) for the blocks to end and applying the version,
or returning None with the version still pending. The implementer read CONS-3's "poll() inside reading() raises
LocalProtocolError" as "poll() while a reading() block is open", i.e. a poll that would have to change weights being
read is a misuse, and tested the lock's reader count instead of the calling thread's nesting. Breaks API-3 ("poll(
timeout) ... `timeout` also bounds its wait for `reading()` blocks in other threads: a version they hold back past it
stays pending, `poll()` returns None") and CONS-2 ("while any reading() block is open the apply waits (... pull:
`poll()`)").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import receiver as _receiver
from weightsync.errors import LocalProtocolError

VIOLATES = ("API-3", "CONS-2")

_orig_poll = _receiver.Receiver.poll


def poll(self, timeout=0.0):
    if self.mode == "pull" and not self._machine.awaiting_init and not self.closed:
        with self._lock._cond:
            reading = self._lock._readers > 0  # BUG: any thread's block, not this thread's
        if reading:
            raise LocalProtocolError("poll() inside reading() would change the weights being read (CONS-3: it would "
                                     "break CONS-1)")
    return _orig_poll(self, timeout)


_receiver.Receiver.poll = poll
