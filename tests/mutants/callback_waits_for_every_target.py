"""Mutant (from the outside round of 2026-12-01, where it survived): done callbacks run once the future is done(),
every target answered, as concurrent.futures callbacks run when a future completes (an implementer who took
"done" and "the outcome of wait() is decided" for one moment). Once a target fails, wait() raises after SEND-7's
window even while another target stays silent; the callback, and `await`, wait on. Violates API-11 (fn is called
as soon as the outcome of wait() is decided).

Seam: SendFuture._watch, the thread that runs the callbacks, which waits for done().
"""

import time

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.future import SendFuture, _call

VIOLATES = ("API-11",)
KILLED_BY = ("conformance/test_binding.py::test_a_done_callback_runs_once_a_failure_decides_though_another_target_is_silent",)


def _when_done(self):
    while not self.done():  # BUG: every target answered, not "the outcome of wait() is decided"
        time.sleep(0.02)
    try:
        self._seen = (self.wait(0), None)
    except Exception as e:  # noqa: BLE001
        self._seen = (None, e)
    with self._calls:
        callbacks, self._callbacks = self._callbacks or [], None
    for fn in callbacks:
        _call(fn, self)


SendFuture._watch = _when_done
