"""Bug: `reading()` releases its block only when the block's body ends normally: the implementer wrote
the generator-based context manager as "enter the read side, yield, leave the read side" with the leave
after the `yield` instead of in a `finally`. A block whose body raises (an inference step that fails on a
bad input, caught further up by the worker's loop, which goes on) leaves its reader counted and its thread
marked as inside a block. From then on every apply waits for a reader that is gone: a push receiver never
applies nor acks another version (the trainer's sends time out on it, it pins their slots), and the
thread's later `poll()` in pull mode raises LocalProtocolError as if it were inside `reading()`.

Breaks CONS-2 ("while any reading() block is open the apply waits": the block is no longer open) and,
through it, ACK-1 (each Receive is answered).
"""
from contextlib import contextmanager

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import receiver as _receiver
from weightsync.clock import Deadline
from weightsync.errors import FIX

VIOLATES = ("CONS-2", "ACK-1")


@contextmanager
def reading(self, timeout=None):
    self._check_open()
    lock, deadline = self._lock, Deadline(timeout, self._clock)
    depth = getattr(lock._local, "depth", 0)
    if depth == 0:  # a nested block never waits (CONS-2)
        with lock._cond:
            lock._held += 1
            try:
                free = lock._cond.wait_for(lambda: not (lock._writing or lock._waiting), deadline.left())
            finally:
                lock._held -= 1
            if not free:
                raise _receiver.SyncTimeoutError([self.id], None, hint=f"an apply held the weights past the timeout. "
                                                 f"{FIX}pass reading() a longer timeout=")
            lock._readers += 1
    lock._local.depth = depth + 1
    yield self
    # BUG: the block is left here, after the `yield`, not in a `finally`: a body that raised never leaves it
    strategy = self._applier.strategy
    if strategy is not None:
        strategy.fence.record()
    lock._local.depth = depth
    if depth == 0:
        with lock._cond:
            lock._readers -= 1
            lock._cond.notify_all()


_receiver.Receiver.reading = reading
