"""Mutant: Heartbeats are taken without a budget, so a receiver that writes them without pause keeps the
sender's thread decoding its frames and every send to the others waits behind it. Violates SEC-8 ("one
peer's legal traffic MUST NOT starve the others"; "a peer MUST NOT send more than 64 at once").

Seam: protocol.HeartbeatBudget.spend (one Heartbeat arrived), which never refuses.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, protocol  # noqa: F401

VIOLATES = "SEC-8"
KILLED_BY = ("conformance/test_wire.py::test_a_heartbeat_flood_starves_no_other_receiver",)


def _spend(self, now):
    return None  # BUG: every Heartbeat is free


protocol.HeartbeatBudget.spend = _spend
