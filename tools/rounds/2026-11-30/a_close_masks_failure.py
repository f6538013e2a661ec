"""Bug: after sender.close(), a pending future whose targets did not all answer raises ClosedError even
when one of its targets had already failed (answered Ack(error)): the close is reported instead of the
failure the caller must act on (restart or repair that receiver)."""
from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import ClosedError
from weightsync.future import SendFuture

VIOLATES = ("LIFE-8", "SEND-2")

_orig = SendFuture._error


def _error(self, timed_out):
    if self._closed_on:  # BUG: a close with targets unanswered wins over a target's known failure
        return ClosedError(f"the sender was closed before receiver(s) {self._closed_on} answered version "
                           f"{self.version} (LIFE-8)")
    return _orig(self, timed_out)


SendFuture._error = _error
