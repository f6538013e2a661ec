"""Bug: the sender takes an Ack(error) of version v as the answer to v alone (an error says only that v
failed), so the older versions pending at that receiver, which the ack also answers (ACK-2), are dropped
from its pending set but never settled: their futures wait until their timeout instead of failing with
ReceiverError naming the receiver."""
from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.messages import OK
from weightsync.protocol import PeerMachine, Settled

VIOLATES = ("ACK-2", "ACK-6", "SEND-2")


def _ack(self, msg, nxt):
    pending, version = self.pending, msg.version
    if version not in pending:
        raise self._bad("recv Ack", f"receiver {self.id} acked version {version}, which is not pending (pending: "
                        f"{sorted(pending)})", "ACK-5")
    slot = pending[version]
    # BUG: only an ok ack answers the older pending versions; an error ack settles its own version only
    answered = tuple(v for v in pending if v <= version) if msg.status == OK else (version,)
    self.pending = {v: s for v, s in pending.items() if v > version}
    if self.holds_slot:
        self.held = {slot} if msg.status == OK else self.held | {slot}
    self.acked = version if msg.status == OK else None
    self.state = nxt
    return Settled(answered, msg.status, msg.detail)


PeerMachine._ack = _ack
