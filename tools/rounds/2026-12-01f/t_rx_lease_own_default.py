"""Bug: a TCP receiver gives up on a silent sender after its own default lease (5 s), not after the lease the
sender's Init announced. It takes `lease_ms` from Init only to pace its own Heartbeats (a fifth of it). A trainer
that chose a long lease so that pauses are tolerated (`lease=20, heartbeat=8`: a checkpoint, a GC pause, a slow
link) has its idle workers stop after 5 s of its (legal) silence: each worker's receiver stops with "lease
expired", and the trainer's next send finds them gone. The implementer read "the receiver learns the lease" in
Init as the lease the *sender* holds the receiver to, and "the reference's default: 5 s" as the receiver's own
patience. Breaks NET-4 ("A side that has received nothing on the channel for the lease of Init (`lease_ms` ...)
... treats the channel as ended") and API-10 (`lease`: "the `lease_ms` it announces").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, limits  # noqa: F401
from weightsync import profiles as _profiles
from weightsync.timers import Liveness

VIOLATES = ("NET-4", "API-10")


def receiver_liveness(self, now, lease):
    # BUG: Init's lease paces our Heartbeats; how long we wait for the sender is our own default
    return Liveness(now, limits.LEASE, limits.receiver_heartbeat(lease))


_profiles.NetworkProfile.receiver_liveness = receiver_liveness
