"""Mutant (from the outside round of 2026-12-01, where it survived): `reading()` marks its thread as inside a block
(the nesting depth that lets a nested block enter at once) before it waits for an apply, and restores it only
around the block's body. A reading(timeout) that times out leaves the depth at 1: every later block in that thread
is taken for a nested one, enters without waiting and is not counted as a reader, so applies run inside it.
Violates CONS-2 (an apply waits while any reading() block is open).

Seam: ApplyLock.read, with the depth raised before the wait.
"""

from contextlib import contextmanager

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.rwlock import ApplyLock

VIOLATES = ("CONS-2",)
KILLED_BY = ("conformance/test_consistency.py::test_a_nested_reading_never_waits_even_for_a_waiting_apply",)


@contextmanager
def _depth_first(self, deadline):
    depth = getattr(self._local, "depth", 0)
    self._local.depth = depth + 1  # BUG: inside from here on, even if the wait below times out
    entered = False
    if depth == 0:
        with self._cond:
            self._held += 1
            try:
                free = self._cond.wait_for(lambda: not (self._writing or self._waiting), deadline.left())
            finally:
                self._held -= 1
            if not free:
                raise TimeoutError("an apply held the weights past the timeout")
            self._readers += 1
            entered = True
    try:
        yield
    finally:
        self._local.depth = depth
        if entered:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()


ApplyLock.read = _depth_first
