"""Mutant: a send rejected for bad weights or bad targets still consumes a version. Violates VER-2.

Seam: Sender._publish, wrapped: a rejection moves the version before it is raised.
"""

from weightsync import *
from weightsync import CAPABILITIES, WeightSyncError, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "VER-2"
KILLED_BY = ("conformance/test_failures.py::test_send_to_unconnected_receiver_is_refused",)


class Sender(_Sender):
    def _publish(self, weights, workers, deadline):
        try:
            return super()._publish(weights, workers, deadline)
        except (WeightSyncError, ValueError):
            self._version += 1  # BUG: the number is spent although nothing was published
            raise
