"""Mutant: after a copying receiver answers Ack(error), the sender keeps the slot of the version it failed pinned, as
it does for a zero-copy receiver, until the receiver acks a later version ok: a send waiting for a slot never gets
the one that answer freed and times out naming the failed receiver. Violates SLOT-2 (an Ack(error) answers the
Receive; only a zero-copy receiver holds a slot) and SLOT-3. From a fifteenth outside round.

Seam: protocol.PeerMachine._ack.
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, protocol  # noqa: F401
from weightsync.messages import OK

VIOLATES = ("SLOT-2", "SLOT-3")
KILLED_BY = ("conformance/test_failures.py::test_an_ack_error_frees_the_slot_a_copying_receiver_pinned",)

_ack = protocol.PeerMachine._ack


def _ack_keeping(self, msg, nxt):
    slot = self.pending.get(msg.version)
    settled = _ack(self, msg, nxt)
    if msg.status != OK and not self.holds_slot and slot is not None:
        self.held = self.held | {slot}  # BUG: "an Ack(error) ends no hold", read as a rule for every receiver
    return settled


protocol.PeerMachine._ack = _ack_keeping
