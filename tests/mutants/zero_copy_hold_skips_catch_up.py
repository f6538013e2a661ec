"""Mutant: an ok Ack that answers several pending versions at once (a zero-copy pull receiver that applied only
the newest, ACK-2) ends the pending versions but leaves the receiver's hold on the slot it held before; the slot of
the version it now views is written by the next sends to the others. Violates ZC-2 (the held slot is not written
until a newer version is acked), SLOT-2 and ACK-3. From a twelfth outside round.

Seam: PeerMachine._ack.
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.messages import OK
from weightsync.protocol import PeerMachine, Settled

VIOLATES = ("ZC-2", "SLOT-2", "ACK-3")
KILLED_BY = ("conformance/test_consistency.py::test_zero_copy_slot_is_not_rewritten_while_held[the newest of two it caught up on]",)


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
