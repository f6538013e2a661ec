"""Mutant: `receiver.close()` wakes a `poll()` that waits for a version (the channel's wake) but not one that waits for
the `reading()` blocks of other threads (the apply lock's waiters are not told): that poll goes on waiting for as
long as the block lasts, after close() returned. Violates API-7 (close() from another thread ends a waiting poll(),
which returns None, within the reaction bound) and LIFE-5. From a fifteenth outside round.

Seam: rwlock.ApplyLock.wake (close() is its only caller).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, rwlock  # noqa: F401

VIOLATES = ("API-7", "LIFE-5")
KILLED_BY = ("conformance/test_threads.py::test_close_from_another_thread_ends_a_waiting_poll",)


def wake(self):
    pass  # BUG: a close is told to the channel's wait only


rwlock.ApplyLock.wake = wake
