"""Mutant: when a zero-copy receiver answers Ack(error), the sender keeps counting the slot it held but not
the slot of the version it failed ("it never applied that version, so it does not read its slot"), and may
write that slot while the receiver can still read it. Violates ZC-2 ("the sender counts both as held until
its next ok Ack").

Seam: the class of each receiver's PeerMachine (made by Hub.new_peer), whose handle() puts back the
slots held before an Ack(error) of a zero-copy receiver.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.messages import OK, Ack
from weightsync.protocol import PeerMachine

from ._seams import every_peer_machine

VIOLATES = "ZC-2"
KILLED_BY = ("conformance/test_consistency.py::test_an_error_ack_of_a_zero_copy_receiver_keeps_both_its_slots_held",)


class _Machine(PeerMachine):
    def handle(self, msg):
        before = set(self.held)
        settled = super().handle(msg)
        if isinstance(msg, Ack) and msg.status != OK and self.holds_slot:
            self.held = before  # BUG: the failed version's slot counts as free
        return settled


every_peer_machine(_Machine)
