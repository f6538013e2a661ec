"""Bug: done callbacks run in the thread that reads the last answer, at the moment it settles the future, while
that thread still holds the sender's lock; a callback that calls the sender (chains the next `send_async`, reads
`done()` of another future through a send, drops a slow worker) waits for the lock its own thread holds: with a
timeout it raises SyncTimeoutError ("another thread held the sender") inside the callback, where it is only
logged, so the chained send never happens; without one it deadlocks the thread that was reading answers. The
implementer wanted callbacks to fire "as soon as the outcome of wait() is decided" and saw that the earliest
moment is when the answer is settled, not when a watcher thread is next scheduled; the settling thread is "a
thread of the binding" (the watcher, the helper, a polling caller), and they overlooked that it settles under the
lock. Breaks API-11 ("from a thread of the binding, never with the sender's lock held, so fn may call the
sender").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import future as _future
from weightsync import publishing as _publishing

VIOLATES = ("API-11",)

_orig_settle = _publishing.Publisher.settle


def settle(self, version, rid, cause, detail):
    future = self.futures.get(version)
    _orig_settle(self, version, rid, cause, detail)
    if future is not None and future._complete:
        # BUG: every target answered: the outcome is decided now, so call the callbacks now, in this thread
        # (the one that read the answer), rather than wait for the watcher thread to be scheduled.
        error = future._error(timed_out=False)
        future._seen = (None, error) if error is not None else (future.version, None)
        with future._calls:
            callbacks, future._callbacks = future._callbacks or [], None
        for fn in callbacks:
            _future._call(fn, future)


_publishing.Publisher.settle = settle
