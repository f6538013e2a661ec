"""Bug: the sender moves a zero-copy receiver's hold to the slot of a version as soon as it sends the Receive, not
when the receiver acks it: the old slot, which the worker still views until it has applied the new version, counts
as free at once. A zero-copy pull worker that has not polled yet (or a push worker whose apply waits for its
`reading()` blocks) then finds the weights it holds rewritten under it by the next send, to a version it was
never told of, while `receiver.version` still names the old one. A careful implementer could have written it
from SLOT-2's list ("a slot named by a Receive or Init not yet answered; a slot a zero-copy receiver holds"):
the new slot is pinned by the pending Receive anyway, so making it the held slot at once looks like bookkeeping
done early, and the Ack then only confirms it; but the Receive only announces the switch, and ZC-2 ends the old
hold at the ok Ack. Breaks ZC-2 ("The sender MUST NOT write the slot a zero-copy receiver holds until that
receiver acked a newer version with ok"), SLOT-2 ("The sender MUST write only a free slot ... none of ... a slot
a zero-copy receiver holds") and CONS-1 ("code of the polling thread between two polls (pull), sees every array
at one version").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.protocol import PeerMachine

VIOLATES = ("ZC-2", "SLOT-2", "CONS-1")

_send_receive = PeerMachine.send_receive


def send_receive(self, version, slot, slots, introduces=False):
    new = _send_receive(self, version, slot, slots, introduces)
    if self.holds_slot:
        # BUG: the receiver will view `slot` once it applies this version, and the pending Receive pins it
        # meanwhile, so the hold moves now; the slot it still views until its Ack is no longer counted.
        self.held = {slot}
    return new


PeerMachine.send_receive = send_receive
