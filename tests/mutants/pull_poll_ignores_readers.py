"""Mutant, written apart from the suite: in pull mode poll() applies at once, without waiting for reading()
blocks open in other threads ("pull mode applies only when the worker asks, so no lock is needed").
Violates CONS-2 (an apply happens only at a safe point, in both modes) and so CONS-1.

Seam: the receiver's apply lock (rwlock.ApplyLock); in pull mode its write side does not wait for readers.
"""

import functools

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Receiver as _Receiver
from weightsync.rwlock import ApplyLock

VIOLATES = ("CONS-2", "CONS-1")
KILLED_BY = ("conformance/test_consistency.py::test_poll_waits_for_reading_blocks_in_other_threads",)


class _NoWaitLock(ApplyLock):
    def acquire_write(self, deadline, cancelled=lambda: False):
        with self._cond:
            self._writing = True  # BUG: readers in other threads are not waited for
            return True


class Receiver(_Receiver):
    @functools.wraps(_Receiver.__init__)  # the public signature stays the reference's (API-3)
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.mode == "pull":
            self._lock = _NoWaitLock()
