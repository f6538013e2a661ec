"""Mutant (from the outside round of 2026-12-01c, where it survived): A done callback added by another thread while the
future's callbacks are running is never called. The implementer runs the callbacks outside the future's lock (API-11
wants them free to call the sender) on a copy of the list, and marks the callbacks as run only afterwards ("they
have run once the loop is over"). A callback added in between finds the list still there, is appended to it, and is
dropped when the list is cleared: it is neither run by the watcher nor "called at once, in the calling thread".
Nothing shows with one thread, or when the callbacks are quick; a monitoring thread that hooks a future at the
moment a slow first callback (logging, a checkpoint) runs loses its hook. Breaks API-11:
"`future.add_done_callback(fn)` calls `fn(future)` once, as soon as the outcome of `wait()` is decided ... Added
after the callbacks ran, `fn` is called at once, in the calling thread."
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import future as _future

VIOLATES = ("API-11",)
KILLED_BY = ("conformance/test_binding.py::test_a_done_callback_added_while_the_callbacks_run_is_called_once",)


def _watch(self):
    try:
        self._seen = (self.wait(None), None)
    except Exception as e:  # noqa: BLE001 - decided: SEND-2, SEND-7, the sender closed (LIFE-8)
        self._seen = (None, e)
    with self._calls:
        callbacks = list(self._callbacks or [])
    for fn in callbacks:
        _future._call(fn, self)
    with self._calls:
        self._callbacks = None  # BUG: marked as run only once they ran: one added meanwhile is dropped


_future.SendFuture._watch = _watch
