"""Bug: when a zero-copy receiver catches up, applying only the newest of several pending versions and acking it
(ACK-2), the sender drops the answered versions but leaves the receiver's hold on the slot it held before: the
slot of the version it now views counts as free once that version is no longer the latest and nothing is pending
on it. A zero-copy worker that polls rarely (an evaluator, a pull worker behind its trainer) then sees its
weights rewritten by later sends to the *other* workers while `receiver.version` still names what it applied.
A careful implementer could have written it while keeping the one-version-in-flight path fast: the hold moves
to the acked version's slot there, and the catch-up path was reasoned about as "the Ack answers versions the
receiver skipped; it never switched to them", forgetting that it did switch to the one the Ack names. Breaks
ZC-2 ("The sender MUST NOT write the slot a zero-copy receiver holds until that receiver acked a newer version
with ok"), SLOT-2 ("The sender MUST write only a free slot ... none of ... a slot a zero-copy receiver holds")
and ACK-3 (an ok Ack promises that r's weights "keep doing so until r applies another version").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.messages import OK
from weightsync.protocol import PeerMachine, Settled

VIOLATES = ("ZC-2", "SLOT-2", "ACK-3")


def _ack(self, msg, nxt):
    pending, version = self.pending, msg.version
    if version not in pending:
        raise self._bad("recv Ack", f"receiver {self.id} acked version {version}, which is not pending (pending: "
                        f"{sorted(pending)})", "ACK-5")
    slot = pending[version]
    if len(pending) == 1:  # one version in flight, the common case: the hold moves to its slot
        answered = (version,)
        self.pending = {}
        if self.holds_slot:
            self.held = {slot} if msg.status == OK else self.held | {slot}
    else:
        # BUG: a catch-up Ack answers versions the receiver skipped; the hold is left where it was
        answered = tuple(v for v in pending if v <= version)
        self.pending = {v: s for v, s in pending.items() if v > version}
    self.acked = version if msg.status == OK else None
    self.state = nxt
    return Settled(answered, msg.status, msg.detail)


PeerMachine._ack = _ack
