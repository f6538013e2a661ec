"""Mutant: `Receiver(on_apply=fn)` calls `fn(version)` from a notifier thread of its own, fed by a queue, not in the
thread that applied the version: a pull worker's `poll()` (and `connect()`) returns before its hook has run, and the
hook runs beside the worker's own code in a thread it does not know. Violates API-11 (`fn(version)` is called in
the thread that applied it). From a fifteenth outside round.

Seam: applier.Applier.applied.
"""
import queue
import threading

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, applier  # noqa: F401

VIOLATES = ("API-11",)
KILLED_BY = ("conformance/test_binding.py::test_on_apply_is_told_each_version_applied",)

_applied = applier.Applier.applied


def _tell(self):
    while True:
        _applied(self, self._told.get())


def applied(self, version):
    if getattr(self, "_told", None) is None:
        self._told = queue.SimpleQueue()
        threading.Thread(target=_tell, args=(self,), name="on-apply", daemon=True).start()
    self._told.put(version)  # BUG: told later, from another thread


applier.Applier.applied = applied
