"""Mutant (the timeout sweep, test_timeouts.py): `receiver.poll(-1)` is taken as `poll(0)`, as
`threading.Event.wait(-1)` takes a negative timeout, instead of being refused: a version that has arrived is
applied and acked. Section 10 and API-7: a negative timeout raises ValueError before the call changes anything
(no version applied).

Seam: Receiver.poll, which clamps its timeout at 0.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import receiver as _rm

VIOLATES = ("API-7",)
KILLED_BY = ("conformance/test_timeouts.py::test_a_negative_timeout_is_refused_and_changes_nothing",)

_poll = _rm.Receiver.poll


def poll(self, timeout=0.0):
    # BUG: a negative timeout is an expired one (as Event.wait has it), not an error.
    return _poll(self, None if timeout is None else max(timeout, 0.0))


_rm.Receiver.poll = poll
