"""Mutant: `sender.close()` settles the pending futures without first reading the answers already in the
channels, so a version every target acked before close() was called (the Acks sitting unread in the
sender's end of the channel) fails with ClosedError. Violates LIFE-8 ("a version whose targets all acked
it ok before close() was called (their Acks had reached the sender's end of the channel, read or not)
completes (wait() returns it)").

Seam: Hub.take_arrived (handles what has arrived, without waiting), which does nothing once the
sender is marked closed - which close() does before it reads the last answers.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.hub import Hub

VIOLATES = "LIFE-8"
KILLED_BY = ("conformance/test_wire.py::test_close_settles_every_pending_send",)


_take_arrived = Hub.take_arrived


def _take_arrived_unless_closed(self):
    if self.closed:
        return  # BUG: a closing sender reads no more answers
    _take_arrived(self)


Hub.take_arrived = _take_arrived_unless_closed
