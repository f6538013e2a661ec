"""Mutant (the timeout sweep, test_timeouts.py): `sender.connect(0)` waits without bound: the sender passes
`timeout or None` on, the usual Python test for "a timeout was given", which takes 0 for none. A trainer that asks
"are the workers up yet?" with `connect(0)` hangs for as long as one is not. API-7: every wait is bounded by its
timeout, and a timeout of 0 bounds it at zero.

Seam: Sender.connect, which takes a timeout of 0 for no timeout.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import sender as _sm

VIOLATES = ("API-7",)
KILLED_BY = ("conformance/test_timeouts.py::test_a_zero_timeout_that_must_wait_raises_at_once",)

_connect = _sm.Sender.connect


def connect(self, timeout=None, *, workers=None):
    # BUG: 0 is falsy, so connect(0) gets no bound.
    return _connect(self, timeout or None, workers=workers)


_sm.Sender.connect = connect
