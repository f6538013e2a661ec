"""Bug: only the sender bounds a frame in progress (WIRE-7); a receiver waits for the rest of a started frame
as long as its call waits, which for a push receiver is forever. The implementer read WIRE-7 through the threat
model of section 13, where the receivers are the untrusted side and the sender trusted, and applied the frame
bound where a receiver could stall the trainer (SEC-2) but not the other way round. A sender that dies or hangs
mid-frame on a half-open TCP or Unix connection (or a squatter that passed no proof) then holds the worker: it
neither stops nor reports anything, and `stopped` stays false. WIRE-7: a side that has waited longer than 10 s
for the rest of a frame MUST treat it as a violation, whatever the timeout of the call that is waiting.
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.join import JoinMachine
from weightsync.receiving import ReceiverMachine
from weightsync.session import Session
from weightsync.timers import FrameTimer

VIOLATES = ("WIRE-7",)

_orig = Session.attach


class _Unbounded(FrameTimer):
    """A receiver trusts its sender to finish what it started: no bound."""

    __slots__ = ()

    def overdue(self, now):
        return False

    def left(self, now):
        return None


def _attach(self, machine, liveness=None):
    _orig(self, machine, liveness)
    if isinstance(machine, ReceiverMachine) or (isinstance(machine, JoinMachine) and not machine.listener):
        if not isinstance(self.frame, _Unbounded):
            old, self.frame = self.frame, _Unbounded(self.frame.bound)
            self.frame.since = old.since


Session.attach = _attach
