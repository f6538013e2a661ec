"""Bug: `future.figures` records a target's answer (`answered_s`, `causes`) only in the future of the version its Ack
names. When a receiver coalesces (ACK-2: a pull worker that polls after several `send_async()`s, a push worker that
was inside `reading()` while two versions came), the older futures complete and `wait()` returns their versions, but
their figures, final once done, say that the worker never answered: `figures.answered_s[0]` raises KeyError in the
observability guide's own example, and a trainer that finds its slowest worker with
`max(f.answered_s, key=f.answered_s.get)` skips exactly the workers that lag. A careful implementer could have written
it by timing answers where the Ack is read ("seconds from publication to its answer": the answer is the Ack of that
version), while the settling of the older versions (ACK-2) happens further on. Breaks API-11 ("`future.figures` is a
`SendFigures` of what is known so far, final once `done()`: ... `answered_s` (per target that answered: seconds from
publication to its answer) and `causes` (per target that answered: `ok` or the failure cause)").
"""
import threading

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, future, hub  # noqa: F401

VIOLATES = ("API-11",)

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
        self._answered.pop(worker, None)  # BUG: timed only where the Ack names this version
        self.__dict__.setdefault("_unfigured", set()).add(worker)


def figures(self):
    skip = self.__dict__.get("_unfigured", set())
    return future.SendFigures(self.version, self._nbytes, self._publish_s, dict(self._answered),
                              {w: c for w, (c, _) in self._outcome.items() if w not in skip})


hub.Hub.settle = settle
future.SendFuture._settle = _settle
future.SendFuture.figures = property(figures)
