"""Mutant (the outside round of 2026-11-29): the sender's Heartbeat budget refills from the time of the
receiver's first Heartbeat instead of from its last one, so once a second has passed since that first
Heartbeat every Heartbeat refills the whole bucket: a receiver that floods Heartbeats a while after its
first one is never cut off, while one that floods from the start is. SEC-8: a token bucket of 64, refilled
at 64 a second. Plausible: the refill timestamp update is one line that is easy to drop; every test that
floods from the start still passes.

Seam: weightsync.timers.HeartbeatBudget.spend.
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import timers as _timers
from weightsync.errors import RemoteProtocolError as _RPE

VIOLATES = "SEC-8"
KILLED_BY = ("conformance/test_rendezvous.py::test_the_heartbeat_budget_is_64_at_once_refilled_at_64_a_second",)


def _spend(self, now):
    self.tokens = min(float(self.burst), self.tokens + (now - self.at) * self.rate)  # BUG: self.at never moves
    if self.tokens < 1.0:
        raise _RPE(f"more than {self.burst} Heartbeats at once, or {self.rate:g} a second",
                   event="recv frame", requirement="SEC-8")
    self.tokens -= 1.0


_timers.HeartbeatBudget.spend = _spend
