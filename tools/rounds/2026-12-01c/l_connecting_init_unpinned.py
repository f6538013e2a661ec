"""Bug: the sender counts only *live* receivers' pins when it looks for a free slot: a receiver that is
connecting (Init sent, no Ready yet) pins nothing, so the slot its Init names is written again once it is
no longer the latest. The implementer reasoned from SM-S-3 ("only a live receiver is sent a Receive") that
only a live receiver reads slots, and wrote the pin set as "pending Receives and held slots of live
receivers". A worker that is still copying the Init's version (a slow start, a large model, a process
that took long to call connect()) while the trainer keeps sending to the others then copies bytes of a
later version, or a mix of two, answers Ready(ok) for the Init's version, and runs on weights that never
existed: nothing reports it.

Breaks SLOT-2: "The sender MUST write only a free slot, that is, a slot that is none of: ... a slot named
by a Receive or Init not yet answered" (and so CONS-1 at that receiver).
"""
import weightsync.protocol as _protocol
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.protocol import PeerState

VIOLATES = ("SLOT-2", "CONS-1")


def pins(self):
    """The slots it may read: those named by unanswered messages, and the one it holds (SLOT-2)."""
    # BUG: only a live receiver is taken to read slots; a connecting one's Init slot is not pinned
    return {*self.pending.values(), *self.held} if self.state is PeerState.LIVE else set()


_protocol.PeerMachine.pins = pins
