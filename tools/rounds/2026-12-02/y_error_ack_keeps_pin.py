"""Bug: after a copying receiver answers Ack(error), the sender keeps the slot of the version it failed pinned until
that receiver acks a later version ok, as it does for a zero-copy receiver. A trainer that leaves a broken worker
out of its sends while it is repaired (`send(workers=healthy)`) finds, with a tight slot bound, that a send waiting
for a slot never gets the one the failed worker's answer freed: it waits out its timeout and raises
SyncTimeoutError naming the broken worker, which has nothing pending. A careful implementer could have written it
from ZC-2's "An Ack(error) ends no hold: the receiver may still read the slot it held and the slot of the version
it failed", reading it as a rule about any receiver whose apply failed ("its weights are undefined, ACK-6: it may
still be reading"), not about zero-copy ones alone. Breaks SLOT-2 (a free slot is one that is not "a slot named by
a Receive or Init not yet answered; a slot a zero-copy receiver holds": an Ack(error) answers) and SLOT-3 ("At the
bound it waits for acks, bounded by the send's timeout, then fails": it fails although an answer freed a slot).
"""
import weightsync  # noqa: F401
import weightsync.protocol as _protocol
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.messages import OK

VIOLATES = ("SLOT-2", "SLOT-3")


def _ack(self, msg, nxt):
    pending, version = self.pending, msg.version
    if version not in pending:
        raise self._bad("recv Ack", f"receiver {self.id} acked version {version}, which is not pending (pending: "
                        f"{sorted(pending)})", "ACK-5")
    slot, alone = pending[version], len(pending) == 1
    answered = (version,) if alone else tuple(v for v in pending if v <= version)
    self.pending = {} if alone else {v: s for v, s in pending.items() if v > version}
    if self.holds_slot or msg.status != OK:  # BUG: "an Ack(error) ends no hold" for every receiver
        self.held = {slot} if msg.status == OK else self.held | {slot}
    else:
        self.held = set()
    self.acked = version if msg.status == OK else None
    self.state = nxt
    return _protocol.Settled(answered, msg.status, msg.detail)


_protocol.PeerMachine._ack = _ack
