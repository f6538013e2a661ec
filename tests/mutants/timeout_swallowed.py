"""Mutant: a send (or wait) whose acks do not come in time returns the version instead of raising
SyncTimeoutError ("it was published; the receivers will catch up"). Violates SEND-2, and SEND-1 (a
synchronous send returns the version only once every target acked it).

Seam: Publisher.await_answers, the wait for a published version's answers shared by send() and future.wait().
"""

from weightsync import *
from weightsync import CAPABILITIES, SyncTimeoutError, __all__  # noqa: F401
from weightsync.publishing import Publisher

VIOLATES = ("SEND-2", "SEND-1")
KILLED_BY = ("conformance/test_failures.py::test_timeout_names_only_the_silent_receivers",)


_await = Publisher.await_answers


def _await_swallowing_timeouts(self, future, deadline):
    try:
        return _await(self, future, deadline)
    except SyncTimeoutError as e:
        if set(e.causes.values()) == {"timeout"}:
            return future.version  # BUG: a timeout reported as success
        raise


Publisher.await_answers = _await_swallowing_timeouts
