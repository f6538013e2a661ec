"""The receiver's apply lock: many readers or one applier, and a waiting applier holds new readers back.

This is what makes an apply happen only at a safe point (CONS-2): `reading()`
blocks take the read side, an apply the write side. A writer that waits stops
new readers from entering, so a worker that reads in a tight loop still gets
its updates. A thread already inside a read block re-enters without waiting,
so helper code can open its own block. Every wait takes a deadline (API-7).
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager

from .clock import Deadline

log = logging.getLogger("weightsync")

#: How long wake() waits for the lock: held longer, it was left held by a block an exception interrupted.
WAKE_WAIT = 1.0


class Cancelled(Exception):
    """The wait for the write side was given up (the receiver is closing)."""


class ApplyLock:
    def __init__(self):
        self._mu = threading.RLock()  # held as `with self._mu`: the Condition's own enter and exit are Python calls
        self._cond = threading.Condition(self._mu)
        self._readers = 0
        self._writing = False
        self._waiting = 0  # writers waiting for the readers to leave
        self._held = 0  # readers waiting for a writer: a writer that leaves wakes them
        self._local = threading.local()

    def reading_here(self) -> bool:
        """Whether the calling thread is inside a read block."""
        return getattr(self._local, "depth", 0) > 0

    @contextmanager
    def read(self, deadline: Deadline):
        """The read side; TimeoutError when an apply keeps it past `deadline`."""
        depth = getattr(self._local, "depth", 0)
        entered = False  # counted among the readers: whatever interrupts this block (LIFE-9) uncounts it
        try:
            if depth == 0:
                with self._mu:
                    self._held += 1
                    try:
                        free = self._cond.wait_for(lambda: not (self._writing or self._waiting), deadline.left())
                    finally:
                        self._held -= 1
                    if not free:
                        raise TimeoutError("an apply held the weights past the timeout")
                    self._readers += 1; entered = True  # noqa: E702 - one line: nothing can fall between them
            self._local.depth = depth + 1
            yield
        finally:
            self._local.depth = depth
            if entered:
                with self._mu:
                    self._readers -= 1; entered = False  # noqa: E702
                    self._cond.notify_all()

    def acquire_write(self, deadline: Deadline, cancelled=lambda: False) -> bool:
        """Takes the write side once no reader is left; False when `deadline` passed first.

        Raises Cancelled when `cancelled()` turns true while waiting (wake() re-checks it).
        """
        with self._mu:
            if not (self._readers or self._writing):  # free: no reader can have been held back by this writer
                if cancelled():
                    raise Cancelled
                self._writing = True
                return True
            waiting = False
            try:
                self._waiting += 1; waiting = True  # noqa: E702 - one line: nothing can fall between them
                while self._readers or self._writing:
                    if cancelled():
                        raise Cancelled
                    if deadline.expired():
                        return False
                    self._cond.wait(deadline.left())
                if cancelled():
                    raise Cancelled
            finally:
                if waiting:
                    self._waiting -= 1; waiting = False  # noqa: E702
                if not self._writing:
                    self._cond.notify_all()  # readers held back by this writer may go on
            self._writing = True
            return True

    def release_write(self) -> None:
        with self._mu:
            self._writing = False
            if self._held or self._waiting:  # nobody waits after most applies: no wake-up to make
                self._cond.notify_all()

    def wake(self) -> None:
        """Makes waiting writers re-check `cancelled`; bounded, since close() calls it (LIFE-9): a lock that an
        interrupted block left held leaves nobody waiting to wake."""
        if self._cond.acquire(timeout=WAKE_WAIT):
            try:
                self._cond.notify_all()
            finally:
                self._cond.release()


def unlock(lock: threading.Lock) -> None:
    """Releases `lock`; one already released is left so (LIFE-9): an exception that interrupted its holder
    may have left it held, and close() frees it for good, after which that holder's own release finds it free."""
    try:
        lock.release()
    except RuntimeError:
        log.debug("a lock was already released")
