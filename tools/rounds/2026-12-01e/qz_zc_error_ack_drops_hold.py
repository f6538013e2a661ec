"""Bug: once a zero-copy receiver answers Ack(error), the sender counts no slot as held by it, so the next send
to the *other* receivers may write the slot the failed worker still views: a zero-copy inference worker whose
apply failed (a tensor of its module replaced by a wrong shape, so ACK-7 refused the version) finds the rest of
its module's tensors changing under it to a version it was never sent. The implementer read ACK-6 ("r's weights
are then undefined and `receiver.version` is None until its next ok ack") as "r holds no version, hence no
slot", and cleared the hold on an error ack as an ok ack moves it; but a failed apply rebinds nothing, so the
module still views the slot of the version it held, and ZC-2 keeps both slots pinned until the next ok Ack.

Breaks ZC-2 ("An Ack(error) ends no hold: the receiver may still read the slot it held and the slot of the
version it failed, and the sender counts both as held until its next ok Ack") and SLOT-2 ("The sender MUST write
only a free slot, that is, a slot that is none of: ... a slot a zero-copy receiver holds").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.messages import OK
from weightsync.protocol import PeerMachine, Settled

VIOLATES = ("ZC-2", "SLOT-2")


def _ack(self, msg, nxt):
    pending, version = self.pending, msg.version
    if version not in pending:
        raise self._bad("recv Ack", f"receiver {self.id} acked version {version}, which is not pending (pending: "
                        f"{sorted(pending)})", "ACK-5")
    slot, alone = pending[version], len(pending) == 1
    answered = (version,) if alone else tuple(v for v in pending if v <= version)
    self.pending = {} if alone else {v: s for v, s in pending.items() if v > version}
    if self.holds_slot:
        # BUG: an error ack leaves the receiver with no version (ACK-6), so it is taken to hold no slot either
        self.held = {slot} if msg.status == OK else set()
    self.acked = version if msg.status == OK else None
    self.state = nxt
    return Settled(answered, msg.status, msg.detail)


PeerMachine._ack = _ack
