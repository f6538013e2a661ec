"""Mutant: SEC-8's Heartbeat budget (a bucket of 64, refilled at 64 a second) is one bucket for the whole process,
spent by every peer's Heartbeats together, instead of one per channel: peers that each stay within their budget
(many network workers beating under a short lease) drain it together, and whichever finds it empty is cut off as a
violation. Violates SEC-8 (the budget is each peer's) and SEC-5. From a sixteenth outside round.

Seam: session.HeartbeatBudget (the budget each channel's session makes).
"""
import threading

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, session, timers  # noqa: F401

VIOLATES = ("SEC-8", "SEC-5")
KILLED_BY = ("conformance/test_rendezvous.py::test_the_heartbeat_budget_is_64_at_once_refilled_at_64_a_second",)

_one: list = []
_lock = threading.Lock()


def budget(now, *args, **kwargs):
    with _lock:
        if not _one:
            _one.append(timers.HeartbeatBudget(now, *args, **kwargs))  # BUG: made once, every channel's
        return _one[0]


session.HeartbeatBudget = budget
