"""Bug: `receiver.close()` from another thread ends a `poll()` that waits for a version (it writes the wake pipe
the channel wait watches) but not one that waits for the `reading()` blocks of other threads to end: that poll goes
on waiting, and close() waits for it (its bounded wait for the poll to leave) before it closes without it. A pull
worker shutting down while an inference thread is inside a long `reading()` block and the main loop's `poll()`
waits for it finds its main thread still blocked in `poll()` long after close() returned, for as long as the block
lasts. A careful implementer could have written it from LIFE-5 and API-7 thinking of poll()'s usual wait, for the
next message on the channel ("close() ... ends a waiting poll()"), and given the apply lock no wake-up of its own at
close, since the push thread's wait for readers is left to end by itself ("one in progress is waited for").
Breaks API-7 ("On a receiver, close() from another thread ends a waiting poll() (which returns None) and the apply
thread within the reaction bound") and LIFE-5 ("returns within the reaction bound").
"""
import threading

import weightsync  # noqa: F401
import weightsync.receiver as _receiver
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, limits  # noqa: F401
from weightsync.clock import Deadline
from weightsync.rwlock import unlock

VIOLATES = ("API-7", "LIFE-5")


def close(self):
    if self.closed:
        return
    self._closing = True
    self._wake.wake()  # BUG: wakes the channel wait only; the apply lock's waiters are not told
    bound = Deadline(0.9 * limits.REACTION_BOUND, self._clock)
    thread = self._thread
    if thread is not None and thread is not threading.current_thread():
        try:
            thread.join(timeout=bound.cap(limits.CLOSE_WAIT))
        except RuntimeError:
            pass
    if self._pending is not None:
        self._pending.close(bound)
    self._io.acquire(timeout=bound.left() or 0.0)
    try:
        self._applier.release()
        self._wake.close()
        self._machine.close()
    finally:
        unlock(self._io)


_receiver.Receiver.close = close
