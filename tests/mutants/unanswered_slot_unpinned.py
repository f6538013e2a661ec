"""Mutant: the sender pins only the slots its receivers hold, not the slot a Receive it sent and they have not
answered names ("they have not read it yet, so it is free"), and may write the next version into a slot a
receiver is about to read. Violates SLOT-2 ("a slot named by an unanswered Receive is not written").

Seam: the class of each receiver's PeerMachine (made by Hub.new_peer), whose pins() leaves out its
unanswered Receives.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.protocol import PeerMachine

from ._seams import every_peer_machine

VIOLATES = "SLOT-2"
KILLED_BY = ("conformance/test_consistency.py::test_a_slot_named_by_an_unanswered_receive_is_not_rewritten",)


class _Machine(PeerMachine):
    def pins(self):
        return set(self.held) if self.active else set()  # BUG: pending Receives' slots are not pinned


every_peer_machine(_Machine)
