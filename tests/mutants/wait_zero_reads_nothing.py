"""Mutant (from the outside round of 2026-12-01b, where it survived): a wait whose deadline has already passed raises
SyncTimeoutError before it reads the answers that have arrived. The implementer wrote the wait for acks as the usual
loop, "until complete: if the deadline passed, raise the timeout; else poll the channels until the deadline", which
never polls once when the deadline is already over. So `future.wait(0)`, the non-blocking look a trainer takes
between steps ("has version v landed on every worker yet?"), raises SyncTimeoutError naming receivers whose Acks
have been sitting in the sender's channels for seconds, and keeps doing so for as long as no other call reads them;
only `done()` or a wait with time to spare sees them. SEND-5: `wait(timeout)` behaves as SEND-1 and SEND-2, and
SEND-2's SyncTimeoutError is for targets that gave no answer before the timeout.

Seam: Publisher.await_answers, which raises the timeout before one look at what arrived.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import publishing as _publishing
from weightsync.clock import Deadline

VIOLATES = ("SEND-5", "SEND-2")
KILLED_BY = ("conformance/test_versions.py::test_wait_times_out_and_can_wait_again",)


def await_answers(self, future, deadline: Deadline) -> int:
    """Waits for every target's answer; raises one error naming every receiver at fault (SEND-2, SEND-7)."""
    while True:
        complete = future._complete
        by = None if complete else future._settle_by()
        if complete or (by is not None and self.hub.clock() >= by):
            error = future._error(timed_out=False)
            if error is None:
                return future.version
            raise error
        if deadline.expired():  # BUG: no look at what has arrived before giving up
            error = future._error(timed_out=True)
            assert error is not None, "a target that has not answered has timed out"
            raise error
        self.hub.wait_for_events(deadline.earlier(by))


_publishing.Publisher.await_answers = await_answers
