"""Bug: an ok Ack from a receiver answers every version pending on it, not only those up to the version it names: when
two sends are in flight to one worker (send_async pipelining) and the worker acks the older one before it has read the
newer, the newer send completes too: `future.wait()` returns its version while the worker still holds the older one,
and the slot of the newer version is no longer counted as read by it, so the sender may write it while the worker is
about to read it. A careful implementer could have written it from ACK-2's "A receiver with several pending Receives
MAY apply only the newest; its Ack ... answers every pending Receive", reasoning that a receiver always jumps to the
newest it has, so once it answers it has caught up, and dropping the rest of the sentence ("with a version <= v").
Breaks ACK-2 ("its Ack of version v answers every pending Receive with a version <= v"), SEND-1 ("returns the new
version only when every targeted receiver acked it (or a newer one)") and SLOT-2 ("a slot named by a Receive or Init
not yet answered" is not free).
"""
import weightsync  # noqa: F401
import weightsync.protocol as _protocol
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.messages import OK
from weightsync.protocol import Settled

VIOLATES = ("ACK-2", "SEND-1", "SLOT-2")


def _ack(self, msg, nxt):
    pending, version = self.pending, msg.version
    if version not in pending:
        raise self._bad("recv Ack", f"receiver {self.id} acked version {version}, which is not pending (pending: "
                        f"{sorted(pending)})", "ACK-5")
    slot = pending[version]
    answered = tuple(pending)  # BUG: the receiver jumps to the newest it has: an answer clears everything pending
    self.pending = {}
    if self.holds_slot:
        self.held = {slot} if msg.status == OK else self.held | {slot}
    self.acked = version if msg.status == OK else None
    self.state = nxt
    return Settled(answered, msg.status, msg.detail)


_protocol.PeerMachine._ack = _ack
