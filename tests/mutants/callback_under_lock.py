"""Mutant: done callbacks run as soon as the last target's answer is read, in the thread that read it,
while that thread still holds the sender's lock; a callback that calls the sender then waits for a lock
its own thread holds. Violates API-11 ("calls fn(future) once ... from a thread of the binding, never
with the sender's lock held, so fn may call the sender").

Seam: the sender's SendFuture (publishing.SendFuture): its _settle, which the sender calls under its lock
for each answer, runs the callbacks once the future is complete.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, future, publishing  # noqa: F401

VIOLATES = "API-11"
KILLED_BY = ("conformance/test_binding.py::test_a_done_callback_is_called_once_without_polling_and_may_call_the_sender",)

_Future = future.SendFuture


class _EagerFuture(_Future):
    def _settle(self, worker, cause, detail):
        super()._settle(worker, cause, detail)
        if self._complete:
            self._fire()  # BUG: here the sender's lock is held (Publisher.settle runs under it)

    def _fire(self):
        error = self._error(timed_out=False)
        self._seen = (None, error) if error is not None else (self.version, None)
        with self._calls:
            callbacks, self._callbacks = self._callbacks or [], None
        for fn in callbacks:
            future._call(fn, self)

    def _watch(self):
        try:
            self._seen = (self.wait(None), None)
        except Exception as e:  # noqa: BLE001
            self._seen = (None, e)
        with self._calls:
            callbacks, self._callbacks = self._callbacks or [], None
        for fn in callbacks:
            future._call(fn, self)


publishing.SendFuture = _EagerFuture
