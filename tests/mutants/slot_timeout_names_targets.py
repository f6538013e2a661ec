"""Mutant, written apart from the suite: when no slot is free in time, SyncTimeoutError names the send's
targets instead of the receivers that hold the slots. Violates SLOT-3."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, SyncTimeoutError, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "SLOT-3"


class Sender(_Sender):
    def _publish(self, weights, workers, deadline):
        try:
            return super()._publish(weights, workers, deadline)
        except SyncTimeoutError as e:
            if e.version is not None:
                raise
            targets = list(range(len(self._peers))) if workers is None else list(workers)
            raise SyncTimeoutError(targets, None, hint="no free slot in time; nothing was published (SLOT-3)") from None
