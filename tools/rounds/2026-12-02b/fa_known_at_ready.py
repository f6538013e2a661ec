"""Bug: the sender records which slots a receiver knows when the receiver answers Ready(ok), as every slot its
group holds at that moment, not when it writes the Init, as the slots that Init listed. A slot allocated while a
receiver is connecting (its `connect()` timed out while its worker was still loading, and the trainer went on
sending to the workers that were up) is counted as known although its handle never reached that receiver: the
first Receive that names it carries no `new_slots`, the late worker finds a slot it never mapped, stops as for a
protocol violation, and the trainer's send fails with ReceiverDiedError for it. A careful implementer could have
written it from Table 1's Ready ("Answer to Init") and SLOT-1's "A slot's handle MUST reach a receiver (in Init
...)": a handle has "reached" the receiver once it confirmed, by Ready, that it mapped the slots, so the sender
marks them then, taking them from the group. Breaks SLOT-1 ("A slot's handle MUST reach a receiver (in Init or
in `Receive.new_slots`) before any message names that slot") and, as seen by the trainer, SEC-5 (the late worker
is cut off by the sender's own message).
"""
import weightsync  # noqa: F401
import weightsync.hub as _hub
import weightsync.protocol as _protocol
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("SLOT-1",)

_orig_new_peer, _orig_handle = _hub.Hub.new_peer, _protocol.PeerMachine.handle


def new_peer(self, i, group, pair=None):
    peer = _orig_new_peer(self, i, group, pair)
    peer.machine.group_slots = lambda: [s.id for s in group.slots]
    return peer


def handle(self, msg):
    settled = _orig_handle(self, msg)
    if type(msg) is _protocol.Ready and msg.status == _protocol.OK and hasattr(self, "group_slots"):
        self.known = set(self.group_slots())  # BUG: Ready says it mapped its slots: every slot of its group
    return settled


_hub.Hub.new_peer = new_peer
_protocol.PeerMachine.handle = handle
