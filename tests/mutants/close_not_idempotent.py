"""Mutant: a second sender.close() raises instead of doing nothing. Violates LIFE-4.

Seam: Sender.close, which checks `closed` first.
"""

from weightsync import *
from weightsync import CAPABILITIES, ClosedError, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "LIFE-4"
KILLED_BY = ("conformance/test_lifecycle.py::test_sender_close_stops_everyone_and_releases_everything",)


class Sender(_Sender):
    def close(self):
        if self.closed:
            raise ClosedError("the sender is already closed")  # BUG
        super().close()
