"""Bug: the sender pins, for each receiver, only the slot of the newest version pending at it (plus the slot a
zero-copy receiver holds), not the slots of every unanswered Receive. The implementer read ACK-2 ("a receiver with
several pending Receives MAY apply only the newest; its Ack answers every pending Receive") as saying that an older
pending Receive is superseded once a newer one is sent, so its slot is nobody's any more. But the MAY is the
receiver's choice: a receiver that lags (a pull worker that has not polled, a receiver in the middle of copying the
older version) may still read the older slot until it answers. Once the slot bound is reached the sender writes a
new version into the slot of an unanswered Receive. SLOT-2: the sender MUST NOT write a slot named by a Receive or
Init not yet answered."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.protocol import PeerMachine

VIOLATES = ("SLOT-2",)

_orig = PeerMachine.pins


def _buggy(self):
    if not self.active:
        return set()
    newest = {self.pending[max(self.pending)]} if self.pending else set()  # the older ones are superseded
    return {*newest, *self.held}


PeerMachine.pins = _buggy
