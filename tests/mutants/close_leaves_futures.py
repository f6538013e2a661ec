"""Mutant: close() leaves the sends still pending as they are: their futures never settle, done() stays
false, and wait() raises ClosedError even for a version every target acked before close(). Violates
LIFE-8 ("sender.close() settles every pending send").

Seam: SendFuture._close (what close() tells each pending future), which does nothing.
"""

from weightsync import *
from weightsync import CAPABILITIES, SendFuture, __all__  # noqa: F401

VIOLATES = "LIFE-8"
KILLED_BY = ("conformance/test_wire.py::test_close_settles_every_pending_send",)

SendFuture._close = lambda self: None  # BUG
