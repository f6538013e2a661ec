"""Mutant: the sender records which slots a receiver knows when it answers Ready, as every slot its group holds
then, instead of the slots its Init listed: a slot made while the receiver was connecting (a `connect()` that timed
out, the trainer sending to the others meanwhile) is taken as known though its handle never reached it, and the
first Receive that names it carries no `new_slots`: the receiver is cut off for a slot never introduced. Violates
SLOT-1 (a slot's handle reaches a receiver before any message names that slot). From a sixteenth outside round.

Seam: protocol.PeerMachine.handle (and hub.Hub.new_peer, to give each machine its group).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, hub, protocol  # noqa: F401

VIOLATES = ("SLOT-1",)
KILLED_BY = ("conformance/test_lifecycle.py::test_slots_made_while_a_receiver_connects_reach_it_before_a_receive_names_them",)

_new_peer, _handle = hub.Hub.new_peer, protocol.PeerMachine.handle


def new_peer(self, i, group, pair=None):
    peer = _new_peer(self, i, group, pair)
    peer.machine.group_slots = lambda: {s.id for s in group.slots}
    return peer


def handle(self, msg):
    settled = _handle(self, msg)
    if type(msg) is protocol.Ready and msg.status == protocol.OK and hasattr(self, "group_slots"):
        self.known = set(self.group_slots())  # BUG: whatever the group holds at Ready, introduced or not
    return settled


hub.Hub.new_peer = new_peer
protocol.PeerMachine.handle = handle
