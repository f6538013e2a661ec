"""Bug: a `poll()` that is waiting in one thread when another thread calls `receiver.close()` raises
ClosedError instead of returning None. The implementer applied LIFE-6 ("any call on a closed receiver
raises ClosedError") to a call that was already under way when the close came, re-checking `closed` once
the wait woke up. API-7 says close() from another thread ends a waiting poll(), which returns None: a
worker whose loop is `while (v := receiver.poll(timeout=1)) is not None or not receiver.stopped:` and that
a shutdown thread closes dies with an exception in the middle of its loop."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import ClosedError
from weightsync.receiver import Receiver

VIOLATES = ("API-7",)

_orig = Receiver.poll


def _buggy(self, timeout=0.0):
    got = _orig(self, timeout)
    if got is None and self._closing:  # closed while we waited: a call on a closed receiver (LIFE-6)
        raise ClosedError(f"receiver {self.id} was closed while poll() waited (LIFE-6)")
    return got


Receiver.poll = _buggy
