"""Bug: `sender.drop(i)` waits for the thread that polls the channels to stop polling before it closes
receiver i's channel, as the reference does, but never wakes that thread: it only waits on the condition
for the poller to come back. The implementer reasoned that a polling call returns by itself when an answer
arrives or its timeout passes, so a short wait is enough. But the case drop() exists for is exactly a
training thread stuck in `send(timeout=None)` on a receiver that never answers: nothing wakes that poller,
so drop() from a monitoring thread cannot cut the silent receiver off: it raises SyncTimeoutError after its
own timeout (or hangs with timeout=None) and the stuck send is never failed with ReceiverDiedError."""
import contextlib

from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import SyncTimeoutError as _Timeout
from weightsync.hub import Hub
from weightsync.locking import notify_all

VIOLATES = ("API-9", "API-7")

_orig = Hub.quiet


@contextlib.contextmanager
def _buggy(self, deadline):
    held = False
    try:
        self._holds += 1
        held = True
        while self.polling:  # waits for the poller to come back by itself: no wake()
            left = deadline.left()
            if left is not None and left <= 0:
                raise _Timeout([], None, hint="another thread polled the sender past the timeout (API-7)")
            self.cv.wait(left)
        yield
    finally:
        if held:
            self._holds -= 1
        notify_all(self.cv)


Hub.quiet = _buggy
