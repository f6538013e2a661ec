"""Mutant: a zero-copy receiver's hold starts at its first ok Ack, not at its Ready ("the Init's slot is the
handshake's, not a version it applied"), so the sender may rewrite the Init's slot while a zero-copy receiver
that no send has reached since its handshake still reads it. Violates ZC-2 ("holds its Init's slot from its
Ready(holds_slot=true) on", clause ZC-2.c).

Seam: the class of each receiver's PeerMachine (made by Hub.new_peer), whose handle() forgets the slot held
after a Ready.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.messages import Ready
from weightsync.protocol import PeerMachine

from ._seams import every_peer_machine

VIOLATES = "ZC-2"
KILLED_BY = ("conformance/test_consistency.py::test_zero_copy_slot_is_not_rewritten_while_held",)


class _Machine(PeerMachine):
    def handle(self, msg):
        settled = super().handle(msg)
        if isinstance(msg, Ready):
            self.held = set()  # BUG: the Init's slot counts as free until the first ok Ack
        return settled


every_peer_machine(_Machine)
