"""Bug: a new `reading()` block enters whenever no apply is running, even while an apply waits for the blocks
already open: the apply lock gives readers the preference (the textbook first readers-writers lock). A worker
whose threads read in overlapping blocks (a pool of inference threads, a reader that re-enters in a tight loop
while another is inside) never leaves the apply a moment without readers: the version waits for as long as the
blocks keep overlapping, its Ack with it, and the trainer's `send()` times out on a worker that is busy but
healthy. The implementer read CONS-2's first half ("while any reading() block is open the apply waits") as the
whole rule, and kept readers from ever waiting on a writer that has not started, to spare inference latency.
Breaks CONS-2 ("once an apply waits, new reading() blocks wait for it (no starvation)").
"""
from contextlib import contextmanager

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import rwlock as _rwlock

VIOLATES = ("CONS-2",)


@contextmanager
def read(self, deadline):
    depth = getattr(self._local, "depth", 0)
    entered = False
    try:
        if depth == 0:
            with self._cond:
                self._held += 1
                try:
                    # BUG: only a running apply keeps a reader out; one that waits does not
                    free = self._cond.wait_for(lambda: not self._writing, deadline.left())
                finally:
                    self._held -= 1
                if not free:
                    raise TimeoutError("an apply held the weights past the timeout")
                self._readers += 1; entered = True  # noqa: E702
        self._local.depth = depth + 1
        yield
    finally:
        self._local.depth = depth
        if entered:
            with self._cond:
                self._readers -= 1; entered = False  # noqa: E702
                self._cond.notify_all()


_rwlock.ApplyLock.read = read
