"""Mutant: `poll(timeout)` bounds only its wait for a version; once one is in hand it waits for the `reading()` blocks
of other threads for as long as they last, so a pull worker's `poll(0.1)` stalls behind a long read. Violates API-7
(every wait a call makes is bounded by its timeout) and API-3. From a fifteenth outside round (two colleagues wrote
it): the suite's worker used to wait on that poll itself, outlive its own answer's bound and call the run
inconclusive.

Seam: rwlock.ApplyLock.acquire_write.
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, rwlock  # noqa: F401
from weightsync.clock import Deadline

VIOLATES = ("API-7", "API-3")
KILLED_BY = ("conformance/test_threads.py::test_poll_and_reading_bound_their_wait_for_other_threads",)

_acquire_write = rwlock.ApplyLock.acquire_write


def acquire_write(self, deadline, cancelled=lambda: False):
    return _acquire_write(self, Deadline(None, deadline.clock), cancelled)  # BUG: readers are waited for unbounded


rwlock.ApplyLock.acquire_write = acquire_write
