"""Mutant, written apart from the suite: a send collects every target's answer before reporting; an Ack(error) or
a dead receiver is raised only once all targets answered or the timeout expired, not at once.
Violates SEND-2 ("a failure known early is raised early rather than after the timeout")."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, SyncTimeoutError, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "SEND-2"


class Sender(_Sender):
    def _wait(self, future, deadline):
        with self._lock:
            while True:
                self._check_open()
                if future.done():
                    future._raise_failures()
                    return future.version
                if deadline.expired():
                    future._raise_failures()
                    missing = [i for i in future.workers if i not in future._outcome]
                    raise SyncTimeoutError(missing, future.version, hint="it may still ack later")
                self._pump(deadline.left())
