"""Bug: on a network channel, a frame heard from the peer also restarts this side's own heartbeat interval, as
if it had spoken. The implementer kept one notion of "the channel is active" (TCP keep-alive style): if the peer
just spoke, the connection is plainly alive and a Heartbeat of ours would add nothing. But the peer's lease counts
*our* silence, not the channel's: NET-4 says each side sends Heartbeat whenever it *has sent nothing* for its
interval. When the sender's heartbeat interval (API-10's `heartbeat=`) is shorter than the receiver's (at most a
fifth of the lease), an idle receiver keeps hearing the sender's Heartbeats, never speaks, and the sender names it
gone ("lease expired") one lease after its last Ack, although both processes are healthy.
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("NET-4",)

from weightsync import timers as _timers  # noqa: E402


def hear(self, now):
    """A frame arrived: any frame counts, Heartbeat included (MSG-4)."""
    self.heard = now
    self.spoke = max(self.spoke, now)  # THE BUG: the channel was active, so no Heartbeat is due from us either


_timers.Liveness.hear = hear
