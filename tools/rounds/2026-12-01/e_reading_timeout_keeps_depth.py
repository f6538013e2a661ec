"""Bug: `reading()` marks the calling thread as inside a block (its nesting depth, which makes a nested
`reading()` enter at once, CONS-2) before it waits for a running or waiting apply, and restores it in the
`finally` around the block's body only. When that wait times out, SyncTimeoutError is raised and the depth is
left at 1: from then on every `reading()` in that thread is taken for a nested one, enters without waiting and
without being counted as a reader, so the apply thread applies new versions while the thread reads inside its
blocks (and poll() in that thread raises LocalProtocolError as if inside reading()). CONS-1/CONS-2: while any
`reading()` block is open, the apply waits."""
from contextlib import contextmanager

from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.rwlock import ApplyLock

VIOLATES = ("CONS-1", "CONS-2")

_orig = ApplyLock.read


@contextmanager
def _buggy(self, deadline):
    depth = getattr(self._local, "depth", 0)
    self._local.depth = depth + 1  # inside from here on: a nested call never waits
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


ApplyLock.read = _buggy
