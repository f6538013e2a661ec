"""Bug: the SEC-8 Heartbeat budget (a token bucket of 64, refilled at 64 a second) is one bucket for the whole
process, spent by every peer's Heartbeats together, instead of one per channel. Each worker stays well inside its
own budget, but a trainer with many network workers under a short lease (sixteen workers with `lease=1` beat 5 times
a second each: 80 a second in all) drains the shared bucket, and whichever worker's Heartbeat finds it empty is cut
off as a protocol violator (ReceiverError, cause "violation") although it sent nothing illegal; sends to it fail,
and it must be restarted, over and over. A careful implementer could have written it from SEC-8's purpose, "One
peer's legal traffic MUST NOT starve the others": the bucket was taken for a guard of the sender's intake (the
trainer's CPU spent on unasked frames), so one bucket, made once, guards it. Breaks SEC-8 ("a peer MUST NOT send
more than 64 at once, nor more than 64 a second over time (a token bucket of 64, refilled at 64 a second ...)":
the budget is each peer's) and SEC-5 ("sends that do not target it proceed as if it did not exist").
"""
import threading

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, session, timers  # noqa: F401

VIOLATES = ("SEC-8", "SEC-5")

_shared = []
_lock = threading.Lock()


def _budget(now, *args, **kwargs):
    """The process's Heartbeat budget (BUG: one bucket for every peer's Heartbeats)."""
    with _lock:
        if not _shared:
            _shared.append(timers.HeartbeatBudget(now, *args, **kwargs))
        return _shared[0]


session.HeartbeatBudget = _budget
