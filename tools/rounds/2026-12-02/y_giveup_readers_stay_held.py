"""Bug: when an apply that waits for the open `reading()` blocks gives up (a pull `poll(timeout)` whose timeout
passed, or one that close() cancelled), the `reading()` calls it held back are not told: they go on waiting, as if
the apply still waited, until some block ends or their own timeout passes. A pull worker whose inference threads
read in overlapping blocks while its main loop polls with a short timeout sees a thread that arrived during the
poll stall behind the others' long blocks, although no apply runs or waits any more. A careful implementer could
have written it from CONS-2's "once an apply waits, new reading() blocks wait for it": held-back readers are woken
when "it" (the apply) ends, in `release_write`, and a writer that never wrote was taken to have nothing to release.
Breaks CONS-2 (readers wait only while an apply waits or runs: "once an apply waits, new reading() blocks wait for
it") and API-3 ("reading(timeout) waits while an apply runs or waits to run; timeout bounds that wait").
"""
import weightsync  # noqa: F401
import weightsync.rwlock as _rwlock
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("CONS-2", "API-3")


def acquire_write(self, deadline, cancelled=lambda: False):
    with self._cond:
        if not (self._readers or self._writing):
            if cancelled():
                raise _rwlock.Cancelled
            self._writing = True
            return True
        waiting = False
        try:
            self._waiting += 1; waiting = True  # noqa: E702
            while self._readers or self._writing:
                if cancelled():
                    raise _rwlock.Cancelled
                if deadline.expired():
                    return False
                self._cond.wait(deadline.left())
            if cancelled():
                raise _rwlock.Cancelled
        finally:
            if waiting:
                self._waiting -= 1; waiting = False  # noqa: E702
            # BUG: no notify here: held-back readers are woken by release_write, once the apply is done
        self._writing = True
        return True


_rwlock.ApplyLock.acquire_write = acquire_write
