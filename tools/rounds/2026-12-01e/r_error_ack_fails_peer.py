"""Bug: a receiver that answers Ack(error) is taken as failed by the sender, as one that refused its Init
is: the send of that version fails with ReceiverError as it should, but every later send that targets it
raises ReceiverError at once (`.version` None, "restart it"), so fixing the worker's target does not help:
the next send never reaches it, and the trainer must restart a worker process that is live and could have
been repaired. The implementer read the table's "connecting, recv Ready(error) -> failed" and SM-S-9's
"every pending and later send to it MUST fail with ReceiverError naming it until it is restarted" as the
rule for any error answer (Ack(error) is the same refusal, later), missing that Ack(error) keeps the receiver
live. Breaks ACK-6 ("Ack(r, v, error, detail) says that r could not apply v ... An error ack does not end the
connection: the receiver stays live, and a later send can bring it back"), SEND-4 (raises only for a target
"known to be gone, failed or not connected"), SEND-1 (the later send that the fixed worker acks must return).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import ANSWERED_ERROR
from weightsync.messages import OK
from weightsync.protocol import PeerMachine, PeerState

VIOLATES = ("ACK-6", "SEND-4", "SEND-1")

_ack = PeerMachine._ack


def ack(self, msg, nxt):
    settled = _ack(self, msg, nxt)
    if msg.status != OK:
        # BUG: an error answer ends the receiver as a refused Init does: failed until restarted.
        self.state = PeerState.FAILED
        self.pending.clear()
        self.held.clear()
        self.failure, self.cause = msg.detail or "apply failed", ANSWERED_ERROR
    return settled


PeerMachine._ack = ack
