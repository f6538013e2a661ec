"""Mutant (from the outside round of 2026-11-30, where it survived): the sender takes an Ack(v, error) as the
answer to v alone ("an error only says that v failed"), so the older versions pending at that receiver, which
the Ack answers too, leave its pending set but are never settled: their sends wait out their timeout instead
of failing with ReceiverError naming the receiver. Violates ACK-2 (an Ack of v answers every pending Receive
with a version <= v) and ACK-6 (a failed apply fails the sends it answers, naming the receiver).

Seam: PeerMachine._ack, which settles only the acked version when the status is error.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.messages import OK
from weightsync.protocol import PeerMachine, Settled

VIOLATES = ("ACK-2", "ACK-6")
KILLED_BY = ("conformance/test_wire.py::test_an_error_ack_of_the_newest_fails_every_older_send_pending_there",)

_ack = PeerMachine._ack


def _own_version_only(self, msg, nxt):
    if msg.status == OK or msg.version not in self.pending:
        return _ack(self, msg, nxt)
    older = [v for v in self.pending if v < msg.version]
    got = _ack(self, msg, nxt)
    return Settled(tuple(v for v in got.versions if v not in older), got.status, got.detail)  # BUG: older dropped


PeerMachine._ack = _own_version_only
