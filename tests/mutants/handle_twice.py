"""Mutant: a handle may be pickled any number of times, so two processes can hold one receiver's end of
its channel: once the first dies the second keeps that end open and the sender never reads end of channel,
and the two split the channel's frames between them. Violates CON-3 ("pickling it again ... MUST raise
LocalProtocolError").

Seam: transport.Handle.__reduce__, which no longer marks the handle as gone to a process.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, transport  # noqa: F401
from weightsync.errors import LocalProtocolError

VIOLATES = "CON-3"
KILLED_BY = ("conformance/test_lifecycle.py::test_a_handle_reaches_one_process",)


def _reduce(self):
    if self.closed:
        raise LocalProtocolError(f"handle({self.receiver}) was consumed by connect() (LIFE-2)")
    return (transport.Handle, (self.receiver, self.conn))  # BUG: not marked, so it may go to a second process


transport.Handle.__reduce__ = _reduce
