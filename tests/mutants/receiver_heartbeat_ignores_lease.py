"""Mutant: a network receiver sends Heartbeat after 1 s of silence whatever lease its Init announces ("the
heartbeat is 1 s"), which is a fifth of the default 5 s lease and so looks right, but under a 1 s lease it
speaks only once a lease and the sender may cut it off while it is idle. Violates NET-4 (a receiver's
heartbeat interval is at most a fifth of the lease of Init) under API-10's `lease`.

Seam: limits.receiver_heartbeat (the receiver's interval for a lease), which returns the default interval.
"""

import weightsync.limits
from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("NET-4", "API-10")
KILLED_BY = ("conformance/test_network.py::test_a_short_lease_makes_both_sides_speak_more_often",)

weightsync.limits.receiver_heartbeat = lambda lease: weightsync.limits.HEARTBEAT  # BUG: the lease is ignored
