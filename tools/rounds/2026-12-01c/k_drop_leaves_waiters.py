"""Bug: `sender.drop(i)` fails the versions pending on receiver i but never wakes the calls that
sleep on the sender's condition. To close i's channel, drop() makes every other caller leave
the channels alone (it wakes the polling call, which then waits on the condition instead of
polling again); once done, the implementer just lets the count of such holds fall back,
reasoning that sleepers are woken by whichever thread polls next, or by their own timeout.
But the thread sleeping is the very one that waits for i: `send(timeout=None)` or
`future.wait(None)` blocked on the stuck worker. Its version has failed with
ReceiverDiedError, and it sleeps on for good (with a timeout, until the timeout, then raises
the failure late). drop() is how a watchdog thread frees a training loop stuck on a hung
worker (10.4.1): with this bug the loop stays stuck.

Breaks API-9 (every version pending on it fails for it with ReceiverDiedError: the waiting call
never raises it) and API-7 ("an answer read by one thread settles every future waiting on it";
a call waiting on the sender never stops another thread's from proceeding).
"""
import contextlib

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import hub as _hub
from weightsync.errors import SyncTimeoutError

VIOLATES = ("API-9", "API-7")


@contextlib.contextmanager
def quiet(self, deadline):
    held = False
    try:
        self._holds += 1
        held = True
        while self.polling:
            self.wake()
            left = deadline.left()
            if left is not None and left <= 0:
                raise SyncTimeoutError([], None, hint="another thread polled the sender past the timeout (API-7)")
            self.cv.wait(left)
        yield
    finally:
        if held:
            self._holds -= 1  # BUG: the callers held back meanwhile are not woken


_hub.Hub.quiet = quiet
