"""Bug: in pull mode `poll()` applies without waiting for the `reading()` blocks open in other threads: it marks the
apply as running (so that blocks opened meanwhile wait for it) but does not wait for the readers already inside. A
pull worker whose other threads read the weights inside `reading()` (an inference thread beside the rollout loop, as
the push-pull guide's table allows: "other threads use reading()") sees the weights change under a forward pass that
is already running: a block can read half of one version and half of the next. A careful implementer could have
written it from CONS-3 and the guide's "Outside poll() the weights never change, so the thread that polls needs no
reading()": in pull mode the polling thread owns the weights, so the write lock only had to hold new readers back.
Breaks CONS-2 ("An apply happens only at a safe point, in both modes: while any `reading()` block is open the apply
waits (push: the apply thread; pull: `poll()`)") and CONS-1 ("code inside `reading()`, in any thread and in either
mode, ... sees every array at one version").
"""
import threading

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, receiver, rwlock  # noqa: F401

VIOLATES = ("CONS-2", "CONS-1")

_here = threading.local()
_acquire_write = rwlock.ApplyLock.acquire_write
_poll = receiver.Receiver.poll


def acquire_write(self, deadline, cancelled=lambda: False):
    if getattr(_here, "polling", False):
        # BUG: pull mode: the polling thread owns the weights; only hold new readers back
        with self._cond:
            if cancelled():
                raise rwlock.Cancelled
            self._writing = True
            return True
    return _acquire_write(self, deadline, cancelled)


def poll(self, timeout=0.0):
    _here.polling = True
    try:
        return _poll(self, timeout)
    finally:
        _here.polling = False


rwlock.ApplyLock.acquire_write = acquire_write
receiver.Receiver.poll = poll
