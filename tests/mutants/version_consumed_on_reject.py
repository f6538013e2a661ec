"""Mutant: a send rejected for bad weights or bad targets still consumes a version. Violates VER-2."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, WeightSyncError, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "VER-2"


class Sender(_Sender):
    def _publish(self, weights, workers, deadline):
        try:
            return super()._publish(weights, workers, deadline)
        except (WeightSyncError, ValueError):
            self._version += 1
            raise
