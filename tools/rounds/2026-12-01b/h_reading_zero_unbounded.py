"""Bug: `receiver.reading(timeout=0)` waits without bound: the receiver builds the block's deadline with
`Deadline(timeout) if timeout else Deadline(None)`, the usual Python test for "a timeout was given", which takes
0 for none. A worker that wants to read the weights only if no apply is running or waiting (`reading(0)`, and
skip the step on SyncTimeoutError) instead waits behind the apply, and behind every other thread's block that holds
the apply back. API-3: `timeout` bounds that wait, after which reading() raises SyncTimeoutError; API-7: every
wait is bounded by its timeout.
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

from contextlib import contextmanager

from weightsync import receiver as _rm
from weightsync.clock import Deadline
from weightsync.errors import FIX, SyncTimeoutError

VIOLATES = ("API-3", "API-7")


@contextmanager
def reading(self, timeout=None):
    self._check_open()
    try:
        # BUG: 0 is falsy, so reading(0) gets no deadline.
        cm = self._lock.read(Deadline(timeout, self._clock) if timeout else Deadline(None, self._clock))
        cm.__enter__()
    except TimeoutError:
        raise SyncTimeoutError([self.id], None, hint=f"an apply held the weights past the timeout. {FIX}pass "
                               "reading() a longer timeout=") from None
    try:
        yield self
    finally:
        strategy = self._applier.strategy
        try:
            if strategy is not None:
                strategy.fence.record()
        finally:
            cm.__exit__(None, None, None)


_rm.Receiver.reading = reading
