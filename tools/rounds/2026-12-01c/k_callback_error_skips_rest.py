"""Bug: when one done callback raises, the callbacks added after it are never called. The
implementer logged a callback's exception "so that it changes nothing else" with one
`try` around the loop that runs the callbacks, instead of one around each call: the first
callback that raises ends the loop, and every later callback of that future is skipped
(the logging looks right, and a future with a single callback behaves exactly as specified).
A trainer that registers a metrics hook that may fail and then its real hook (free the next
batch, advance the pipeline) silently loses the second one.

Breaks API-11: "`future.add_done_callback(fn)` calls `fn(future)` once, as soon as the outcome of
`wait()` is decided ... An exception from `fn` is logged and changes nothing else."
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import future as _future

VIOLATES = ("API-11",)


def _watch(self):
    try:
        self._seen = (self.wait(None), None)
    except Exception as e:  # noqa: BLE001 - decided: SEND-2, SEND-7, the sender closed (LIFE-8)
        self._seen = (None, e)
    with self._calls:
        callbacks, self._callbacks = self._callbacks or [], None
    try:  # BUG: one try around every callback: the first that raises skips the rest
        for fn in callbacks:
            fn(self)
    except Exception:  # noqa: BLE001 - a caller's callback changes nothing of ours (API-11)
        _future.log.exception("a done callback of version %d raised", self.version)


_future.SendFuture._watch = _watch
