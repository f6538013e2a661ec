"""Bug: when a wait on a future times out, the future records the silent targets as timed out as if they
had answered so, so the future reads as done and every later wait() raises the same SyncTimeoutError,
even after those receivers acked the version."""
from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import TIMEOUT
from weightsync.future import SendFuture

VIOLATES = ("SEND-5", "SEND-1")

_orig = SendFuture._error


def _error(self, timed_out):
    error = _orig(self, timed_out)
    if timed_out:  # BUG: the timeout is kept as each silent target's outcome, so the future stays failed
        for w in self.workers:
            self._settle(w, TIMEOUT, "no answer before the timeout")
    return error


SendFuture._error = _error
