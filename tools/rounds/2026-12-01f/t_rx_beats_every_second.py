"""Bug: a live TCP receiver says Heartbeat every second (the reference's default interval) whatever lease its Init
announced, so under a sender made with a lease of a second or less (`Sender(..., listen="tcp://...", lease=0.6,
heartbeat=0.1)`, a trainer that wants a frozen worker named within a second) an idle worker, one that is simply not
being sent anything, loses its lease between two of its Heartbeats: the trainer names it gone ("lease expired") and
its next send raises ReceiverDiedError, though the worker is alive and well. The implementer built the receiver's
timer as the sender's is built, `Liveness(now, lease)`, taking the heartbeat from the timer's default ("the
reference: 1 s"), and missed the other half of "the reference: 1 s, or a fifth of a shorter lease" (the handshake's
beats, which compute their own interval, stay right). Breaks NET-4 ("its heartbeat interval is at most a fifth of
the lease of Init for a receiver (the reference: 1 s, or a fifth of a shorter lease)").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import profiles as _profiles
from weightsync.timers import Liveness

VIOLATES = ("NET-4",)


def receiver_liveness(self, now, lease):
    # BUG: the timer's default heartbeat (1 s), not min(1 s, lease / 5)
    return Liveness(now, lease)


_profiles.NetworkProfile.receiver_liveness = receiver_liveness
