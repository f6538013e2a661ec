"""Mutant: a send rejected for bad weights or bad targets still consumes a version. Violates VER-2.

Seam: Publisher.publish, wrapped: a rejection moves the version before it is raised.
"""

from weightsync import *
from weightsync import CAPABILITIES, WeightSyncError, __all__  # noqa: F401
from weightsync.publishing import Publisher

VIOLATES = "VER-2"
KILLED_BY = ("conformance/test_failures.py::test_send_to_unconnected_receiver_is_refused",)


_publish = Publisher.publish


def _publish_spending_the_number(self, weights, workers, deadline):
    try:
        return _publish(self, weights, workers, deadline)
    except (WeightSyncError, ValueError):
        self.version += 1  # BUG: the number is spent although nothing was published
        raise


Publisher.publish = _publish_spending_the_number
