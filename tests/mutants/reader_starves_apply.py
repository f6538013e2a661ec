"""Mutant, written apart from the suite: the apply lock is a plain readers/writer lock without writer priority:
a waiting apply does not hold new reading() blocks back, so overlapping readers can starve
it forever. Violates CONS-2 ("once an apply waits, new reading() blocks wait for it")."""

from contextlib import contextmanager

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Receiver as _Receiver
from weightsync.receiver import _ApplyLock

VIOLATES = "CONS-2"


class _ReaderPreferringLock(_ApplyLock):
    @contextmanager
    def read(self):
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            with self._cond:
                while self._writing:  # BUG: ignores self._waiting
                    self._cond.wait()
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


class Receiver(_Receiver):
    def __init__(self, handle, target=None, *, mode="push", zero_copy=False):
        super().__init__(handle, target, mode=mode, zero_copy=zero_copy)
        self._lock = _ReaderPreferringLock()
