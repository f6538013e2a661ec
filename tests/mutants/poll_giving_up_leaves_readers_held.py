"""Mutant: when an apply that waits for the open `reading()` blocks gives up (a pull `poll(timeout)` whose timeout
passed, or one close() cancelled), the `reading()` calls it held back are not woken: they wait on, as if an apply
still waited, until some block ends or their own timeout passes. Violates CONS-2 (new blocks wait only for an apply
that waits or runs) and API-3. From a fifteenth outside round.

Seam: rwlock.ApplyLock.acquire_write (the reference's, without the wake-up of readers when it gives up).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, rwlock  # noqa: F401

VIOLATES = ("CONS-2", "API-3")
KILLED_BY = ("conformance/test_consistency.py::test_readers_held_back_by_a_poll_that_gave_up_go_in",)


def acquire_write(self, deadline, cancelled=lambda: False):
    with self._cond:
        if not (self._readers or self._writing):
            if cancelled():
                raise rwlock.Cancelled
            self._writing = True
            return True
        self._waiting += 1
        try:
            while self._readers or self._writing:
                if cancelled():
                    raise rwlock.Cancelled
                if deadline.expired():
                    return False
                self._cond.wait(deadline.left())
            if cancelled():
                raise rwlock.Cancelled
        finally:
            self._waiting -= 1  # BUG: the readers it held back are woken by release_write, once an apply ran
        self._writing = True
        return True


rwlock.ApplyLock.acquire_write = acquire_write
