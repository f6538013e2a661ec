"""Mutant: each thread's `reading()` depth is kept in one thread-local shared by every receiver of the process, so
`r1.reading()` opened inside `r0.reading()` is taken for a nested block of r1: it enters without being counted, and
r1's apply runs while it reads. Violates CONS-2 (while any `reading()` block is open the apply waits) and CONS-1.
From a fifteenth outside round.

Seam: rwlock.ApplyLock.__init__.
"""
import threading

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, rwlock  # noqa: F401

VIOLATES = ("CONS-2", "CONS-1")
KILLED_BY = ("conformance/test_consistency.py::test_blocks_belong_to_their_receiver",)

_DEPTH = threading.local()  # BUG: one for the process, not one per receiver
_init = rwlock.ApplyLock.__init__


def __init__(self):
    _init(self)
    self._local = _DEPTH


rwlock.ApplyLock.__init__ = __init__
