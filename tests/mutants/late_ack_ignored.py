"""Mutant: the sender takes an Ack of a version that is not pending, but not above the newest one pending,
for a late duplicate and ignores it, instead of cutting the receiver off. A receiver that acks a version
it was never sent (one published to the others only) or one it already answered then goes on as live,
and its acks no longer say which version it holds. Violates ACK-5 ("an Ack whose version is not pending
for that receiver is a protocol violation"). Plausible: "late acks are harmless" is the natural reading
of a tolerant sender; every forged ack the suite wrote before was of a future version.

Seam: PeerMachine.handle (the sender's view of one receiver), which returns "nothing settled" for such an
Ack instead of raising RemoteProtocolError.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, protocol  # noqa: F401
from weightsync.messages import Ack

VIOLATES = "ACK-5"
KILLED_BY = ("conformance/test_versions.py::test_an_ack_of_a_version_not_pending_is_a_violation_whatever_its_version",)

_handle = protocol.PeerMachine.handle


def _tolerant(self, msg):
    if type(msg) is Ack and msg.version not in self.pending and self.pending and msg.version < max(self.pending):
        return protocol.NOTHING  # BUG: a stale or foreign ack is ignored
    return _handle(self, msg)


protocol.PeerMachine.handle = _tolerant
