"""Mutant: a receiver cut off while live (it died or closed after its handshake) is also marked as a failed
handshake, so the next connect() without workers names it, though a send already did. Violates INIT-5 ("a
receiver that was live when it failed is not [named by the next connect()]: a send names it").

Seam: protocol.PeerMachine._cut, which marks `unreported` only for a receiver cut off while connecting.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, protocol  # noqa: F401

VIOLATES = "INIT-5"
KILLED_BY = ("conformance/test_lifecycle.py::test_connect_names_a_dead_joiner_at_once_with_the_latest_version_and_"
             "never_a_live_one_that_died",)

_cut = protocol.PeerMachine._cut


def _cut_live_too(self, event, why, cause):
    was_live = self.state is protocol.PeerState.LIVE
    failed = _cut(self, event, why, cause)
    self.unreported = self.unreported or was_live  # BUG: a live receiver's end counted as a failed handshake
    return failed


protocol.PeerMachine._cut = _cut_live_too
