"""Mutant (from the outside round of 2026-11-30, where it survived): the sender starts a network receiver's lease
at the first frame it hears from it, not at the Init it sent ("nothing heard yet, nothing to time"), so a joiner
that proves its secret and then says nothing (no Ready, no Heartbeat) is never named by the lease: connect()
waits until its own timeout or the data plane's. Violates NET-4 (the sender counts a receiver's lease from the
Init it sent it).

Seam: NetworkProfile.sender_liveness, whose Liveness runs no lease until a frame was heard.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.profiles import NetworkProfile
from weightsync.timers import Liveness

VIOLATES = ("NET-4",)
KILLED_BY = ("conformance/test_network.py::test_a_joiner_silent_from_its_init_on_is_named_by_the_lease",)


class _LeaseOnceHeard(Liveness):
    heard_once = False

    def hear(self, now):
        self.heard_once = True
        super().hear(now)

    def due(self, now):
        if not self.heard_once:  # BUG: no lease runs until the receiver's first frame
            return self.HEARTBEAT_DUE if now - self.spoke >= self.heartbeat else None
        return super().due(now)

    def left(self, now):
        return max(0.0, self.spoke + self.heartbeat - now) if not self.heard_once else super().left(now)


NetworkProfile.sender_liveness = lambda self, now, lease, heartbeat: _LeaseOnceHeard(now, lease, heartbeat)
