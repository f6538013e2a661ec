"""Mutant: `future.figures` records a target's answer (`answered_s`, `causes`) only in the future of the version its
Ack names. When a receiver coalesces (a pull worker polls once after two sends, ACK-2), the older future completes and
its wait() returns, but its final figures say the worker never answered. Violates API-11 (figures, final once done,
give `answered_s` and `causes` per target that answered). From a fourteenth outside round.

Seam: hub.Hub.settle, future.SendFuture._settle and its figures.
"""
import threading

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, future, hub  # noqa: F401

VIOLATES = ("API-11",)
KILLED_BY = ("conformance/test_binding.py::test_the_figures_of_a_version_answered_by_a_newer_one_s_ack_name_that_answer",)

_here = threading.local()
_hub_settle = hub.Hub.settle
_future_settle = future.SendFuture._settle


def settle(self, peer, settled):
    _here.named = max(settled.versions) if settled.versions else None  # the version the answer names
    try:
        _hub_settle(self, peer, settled)
    finally:
        _here.named = None


def _settle(self, worker, cause, detail):
    known = dict(self._answered)
    _future_settle(self, worker, cause, detail)
    named = getattr(_here, "named", None)
    if named is not None and named != self.version and worker not in known:
        self._answered.pop(worker, None)  # BUG: an answer is timed only where the Ack names this version
        self.__dict__.setdefault("_unfigured", set()).add(worker)


def figures(self):
    skip = self.__dict__.get("_unfigured", set())
    return future.SendFigures(self.version, self._nbytes, self._publish_s, dict(self._answered),
                              {w: c for w, (c, _) in self._outcome.items() if w not in skip})


hub.Hub.settle = settle
future.SendFuture._settle = _settle
future.SendFuture.figures = property(figures)
