"""Mutant (the timeout sweep, test_timeouts.py): `send_async(timeout=-1)` is taken as a timeout already over, as
`threading.Event.wait(-1)` takes it, instead of being refused: with a free slot the version is published and the
future returned, so a caller's arithmetic slip (`timeout=deadline - now` once the deadline passed) publishes a
version it meant to give up on. Section 10 and API-7: a negative timeout raises ValueError before the call changes
anything.

Seam: Sender.send_async, which clamps its timeout at 0 before it builds the deadline.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import sender as _sm

VIOLATES = ("API-7",)
KILLED_BY = ("conformance/test_timeouts.py::test_a_negative_timeout_is_refused_and_changes_nothing",)

_send_async = _sm.Sender.send_async


def send_async(self, weights=None, *, workers=None, timeout=None):
    # BUG: a negative timeout is an expired one (as Event.wait has it), not an error.
    return _send_async(self, weights, workers=workers, timeout=None if timeout is None else max(timeout, 0.0))


_sm.Sender.send_async = send_async
