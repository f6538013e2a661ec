"""Mutant (a bug the reference had until the timeout sweep found it): `future.wait(-1)` on a future whose targets
have all answered returns the version (or raises its error) instead of refusing the timeout: the wait looks at
what is known before it builds its deadline, so the sign is checked only when it has to wait. Section 10 and
API-7: a negative timeout raises ValueError, from every call that takes one.

Seam: SendFuture.wait, which returns a settled outcome before it checks the timeout.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import future as _fm
from weightsync.clock import Deadline

VIOLATES = ("API-7",)
KILLED_BY = ("conformance/test_timeouts.py::test_a_negative_timeout_is_refused_and_changes_nothing",)


def wait(self, timeout=None):
    if self._complete:  # BUG: a settled outcome is given before the timeout is looked at
        error = self._error(timed_out=False)
        if error is not None:
            raise error
        return self.version
    return self._wait(self, Deadline(timeout, self._clock))


_fm.SendFuture.wait = wait
