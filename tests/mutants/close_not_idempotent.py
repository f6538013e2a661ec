"""Mutant: a second sender.close() raises instead of doing nothing. Violates LIFE-4."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, ClosedError, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "LIFE-4"


class Sender(_Sender):
    def close(self):
        if self.closed:
            raise ClosedError("the sender is already closed")
        super().close()
