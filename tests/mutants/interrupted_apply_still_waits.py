"""Mutant: a KeyboardInterrupt in poll()'s wait for other threads' reading() blocks leaves that apply counted as
waiting, so every later reading() block is held back for an apply that never comes. LIFE-9: the interrupted call
leaves the object as a timeout of that wait would, no lock held (a review of the eleventh round's test found it let
through; the test now opens a block in a third thread after the interrupt).

Seam: ApplyLock.acquire_write, which counts the interrupted writer again on its way out.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.rwlock import ApplyLock

VIOLATES = "LIFE-9"
KILLED_BY = ("conformance/test_lifecycle.py::test_an_interrupt_while_a_call_waits_leaves_the_object_working[reader]",)

_acquire_write = ApplyLock.acquire_write


def acquire_write(self, deadline, cancelled=lambda: False):
    try:
        return _acquire_write(self, deadline, cancelled)
    except KeyboardInterrupt:
        with self._cond:
            self._waiting += 1  # BUG: the interrupted writer stays registered
        raise


ApplyLock.acquire_write = acquire_write
