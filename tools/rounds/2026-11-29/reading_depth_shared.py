"""Bug: the apply lock keeps the `reading()` nesting depth on the lock object instead of per thread.
While one thread is inside `reading()`, a second thread's `reading()` looks "nested", enters without
waiting and without being counted as a reader; when the first thread leaves, the waiting apply runs
while the second thread is still inside its block, which then sees its weights change mid-read.
CONS-1: code inside `reading()`, in any thread, sees every array at one version; CONS-2: once an
apply waits, new `reading()` blocks wait for it, and only a nested block *in the same thread* does
not. Plausible: a plain attribute instead of threading.local; single-threaded readers never notice.

Seam: weightsync.rwlock.ApplyLock.__init__ (the depth store it makes).
"""
import types as _types

from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import rwlock as _rwlock

VIOLATES = ("CONS-1", "CONS-2")

_orig = _rwlock.ApplyLock.__init__


def _init(self):
    _orig(self)
    self._local = _types.SimpleNamespace()  # the nesting depth, on the lock


_rwlock.ApplyLock.__init__ = _init
