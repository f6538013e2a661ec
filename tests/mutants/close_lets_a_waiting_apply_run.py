"""Mutant: the apply lock asks whether the receiver is closing only before it waits, not while it waits for the
`reading()` blocks of other threads: a push apply that waited for a block when `close()` came runs once the block
ends, after close() returned, and the receiver's weights change to that version. Violates LIFE-5 (no apply starts
after `close()` returned). From the sixteenth session's sweep of the waits on a receiver's apply lock.

Seam: rwlock.ApplyLock.acquire_write.
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, rwlock  # noqa: F401

VIOLATES = ("LIFE-5",)
KILLED_BY = ("conformance/test_threads.py::test_close_while_an_apply_waits_for_a_reader_starts_no_apply",)

_acquire_write = rwlock.ApplyLock.acquire_write


def acquire_write(self, deadline, cancelled=lambda: False):
    if cancelled():
        raise rwlock.Cancelled
    return _acquire_write(self, deadline)  # BUG: a close that comes while it waits is not seen


rwlock.ApplyLock.acquire_write = acquire_write
