"""Mutant, written apart from the suite: a send collects every target's answer before reporting; an Ack(error) or
a dead receiver is raised only once all targets answered or the timeout expired, not at once.
Violates SEND-2 ("a ReceiverError or ReceiverDiedError is raised without waiting for the timeout or
for the other receivers").

Seam: SendFuture._settle_by (when a wait stops collecting answers after a failure), which never comes.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.publishing import Publisher

VIOLATES = "SEND-2"
KILLED_BY = ("conformance/test_failures.py::test_a_failure_is_raised_before_the_silent_receivers_time_out",)


_await = Publisher.await_answers


def _await_every_target(self, future, deadline):
    future._settle_by = lambda: None  # BUG: a failure waits for every target, or for the timeout
    return _await(self, future, deadline)


Publisher.await_answers = _await_every_target
