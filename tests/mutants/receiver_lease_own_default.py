"""Mutant: a TCP receiver gives up on a silent sender after its own default lease (5 s), taking Init's `lease_ms`
only to pace its Heartbeats: under a longer lease a trainer's legal pause stops every idle worker. Violates NET-4 (a
side counts the lease of Init) and API-10. From a twelfth outside round.

Seam: NetworkProfile.receiver_liveness.
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, limits  # noqa: F401
from weightsync import profiles as _profiles
from weightsync.timers import Liveness

VIOLATES = ("NET-4", "API-10")
KILLED_BY = ("conformance/test_network.py::test_a_tcp_receiver_waits_out_the_lease_its_init_announced_not_a_default_of_its_own",)


def receiver_liveness(self, now, lease):
    # BUG: Init's lease paces our Heartbeats; how long we wait for the sender is our own default
    return Liveness(now, limits.LEASE, limits.receiver_heartbeat(lease))


_profiles.NetworkProfile.receiver_liveness = receiver_liveness
