"""Mutant (from the outside round of 2026-12-01, where the suite judged it inconclusive): `sender.drop(i)` waits for
the thread that polls the channels to stop polling, but never wakes it (an implementer who reasoned that a
polling call returns by itself at an answer or its timeout). The case drop() exists for, a thread stuck in
connect() or send() on a receiver that never answers, is the one it cannot end: drop() waits out its own
timeout and raises SyncTimeoutError. Violates API-9 (drop cuts the receiver off and ends the calls waiting on it).

Seam: Hub.quiet, without its wake() of the polling thread.
"""

import contextlib

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import SyncTimeoutError as _Timeout
from weightsync.hub import Hub
from weightsync.locking import notify_all

VIOLATES = ("API-9",)
KILLED_BY = ("conformance/test_lifecycle.py::test_a_receiver_between_init_and_ready_gets_stop_from_close_and_drop",)


@contextlib.contextmanager
def _unwoken(self, deadline):
    held = False
    try:
        self._holds += 1
        held = True
        while self.polling:  # BUG: no self.wake(): the poller is waited for, never told
            left = deadline.left()
            if left is not None and left <= 0:
                raise _Timeout([], None, hint="another thread polled the sender past the timeout (API-7)")
            self.cv.wait(left)
        yield
    finally:
        if held:
            self._holds -= 1
        notify_all(self.cv)


Hub.quiet = _unwoken
