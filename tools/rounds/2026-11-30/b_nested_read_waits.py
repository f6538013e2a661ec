"""A nested `reading()` in a thread already inside a block waits, like a new block, while an apply is waiting
(the implementer let a waiting writer hold back every read entry, re-entrant ones included, "for fairness"), so
helper code that opens its own block inside the caller's deadlocks until its timeout once a version arrives."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from contextlib import contextmanager
from weightsync.rwlock import ApplyLock

VIOLATES = ("CONS-2",)

_orig_read = ApplyLock.read


@contextmanager
def _buggy_read(self, deadline):
    depth = getattr(self._local, "depth", 0)
    if depth > 0:
        with self._cond:  # BUG: a re-entrant block also waits for a waiting apply (which waits for the outer block)
            if not self._cond.wait_for(lambda: not (self._writing or self._waiting), deadline.left()):
                raise TimeoutError("an apply held the weights past the timeout")
    with _orig_read(self, deadline):
        yield


ApplyLock.read = _buggy_read
