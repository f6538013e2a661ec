"""Bug: the apply lock keeps each thread's `reading()` nesting depth in one thread-local made once, at import,
shared by every receiver of the process, instead of one per receiver. A worker that holds two receivers (a
policy and a reference model in one RLHF worker, an actor and a critic, two trainers' weights) and opens
`r2.reading()` inside `r1.reading()` is taken as nested in r2: the inner block enters without waiting and without
being counted as r2's reader, so r2's apply runs while the block reads r2's weights, which change under it; and
`r2.poll()` inside `r1.reading()` raises LocalProtocolError. A careful implementer could have written it: the
transport already keeps its per-thread read buffers in a module-level `threading.local()`, and CONS-2's "`reading()`
nests in one thread" reads as a property of the thread, not of the receiver. Breaks CONS-2 ("while any `reading()`
block is open the apply waits") and CONS-1 ("code inside `reading()`, in any thread and in either mode, ... sees
every array at one version").
"""
import threading

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, rwlock  # noqa: F401

VIOLATES = ("CONS-2", "CONS-1")

_DEPTH = threading.local()  # BUG: one per thread, for every ApplyLock of the process
_init = rwlock.ApplyLock.__init__


def __init__(self):
    _init(self)
    self._local = _DEPTH


rwlock.ApplyLock.__init__ = __init__
