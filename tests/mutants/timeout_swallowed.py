"""Mutant: a send whose acks do not come in time returns the version instead of raising. Violates SEND-2."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, SyncTimeoutError, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "SEND-2"


class _Future:
    def __init__(self, future):
        self._future = future
        self.version, self.workers = future.version, future.workers

    def done(self):
        return self._future.done()

    def wait(self, timeout=None):
        try:
            return self._future.wait(timeout)
        except SyncTimeoutError:
            return self.version


class Sender(_Sender):
    def send(self, weights=None, *, workers=None, timeout=None):
        try:
            return super().send(weights, workers=workers, timeout=timeout)
        except SyncTimeoutError as e:
            if e.version is not None and e.version == self.version:
                return e.version  # published, then gave up waiting: reported as success
            raise

    def send_async(self, weights=None, *, workers=None, timeout=None):
        return _Future(super().send_async(weights, workers=workers, timeout=timeout))
