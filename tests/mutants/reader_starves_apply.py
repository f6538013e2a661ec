"""Mutant, written apart from the suite: the apply lock is a plain readers/writer lock without writer priority:
a waiting apply does not hold new reading() blocks back, so overlapping readers can starve
it forever. Violates CONS-2 ("once an apply waits, new reading() blocks wait for it").

Seam: the read side of the receiver's apply lock (rwlock.ApplyLock.read), which ignores waiting writers:
the receiver module's ApplyLock, which the Receiver makes and shares with its Applier, is the mutant's.
"""

from contextlib import contextmanager

from weightsync import *
from weightsync import CAPABILITIES, __all__, receiver  # noqa: F401
from weightsync.rwlock import ApplyLock

VIOLATES = "CONS-2"
KILLED_BY = ("conformance/test_consistency.py::test_a_waiting_apply_holds_new_readers_back",)


class _ReaderPreferringLock(ApplyLock):
    @contextmanager
    def read(self, deadline):
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            with self._cond:
                self._held += 1  # counted as held back, so that the apply's end wakes it (release_write)
                try:
                    free = self._cond.wait_for(lambda: not self._writing, deadline.left())  # BUG: ignores _waiting
                finally:
                    self._held -= 1
                if not free:
                    raise TimeoutError("an apply held the weights past the timeout")
                self._readers += 1
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                with self._cond:
                    self._readers -= 1
                    self._cond.notify_all()


receiver.ApplyLock = _ReaderPreferringLock  # BUG: every receiver's apply lock prefers readers
