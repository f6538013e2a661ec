"""Bug: in pull mode `poll(timeout)` bounds only its wait for a version; once a version is in hand it waits for the
`reading()` blocks open in other threads for as long as they last. A pull worker whose inference threads read the
weights in long blocks (a batch of generations, an evaluation pass) and whose main loop calls `poll(timeout=0.1)`
between steps is stalled for the whole of the other threads' blocks, and `poll(0)`, meant to never wait, blocks
too. A careful implementer could have written it from poll()'s first sentence, "applies the newest pending version
and returns it, or returns None when none came within `timeout`": the timeout reads as the wait for a version, and
the apply lock's write side was written to wait for the readers with no deadline (reading blocks are short, and an
apply must only happen at a safe point, CONS-2). Breaks API-3 ("`timeout` also bounds its wait for `reading()`
blocks in other threads: a version they hold back past it stays pending, `poll()` returns None") and API-7 ("every
wait it makes ... is bounded by its timeout").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, rwlock  # noqa: F401
from weightsync.clock import Deadline

VIOLATES = ("API-3", "API-7")

_acquire_write = rwlock.ApplyLock.acquire_write


def acquire_write(self, deadline, cancelled=lambda: False):
    """Takes the write side once no reader is left (raises Cancelled when the receiver closes)."""
    return _acquire_write(self, Deadline(None, deadline.clock), cancelled)  # BUG: readers are waited for unbounded


rwlock.ApplyLock.acquire_write = acquire_write
