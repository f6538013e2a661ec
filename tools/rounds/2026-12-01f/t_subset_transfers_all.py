"""Bug: on a sender that listens on tcp://, every version goes down every live network receiver's data plane, the
subset send's targets' and the others' alike, while the Receive goes to the targets only. A worker left out of a
send (`send(workers=[0])`) has that version's transfer waiting on its data plane; the next Receive it gets takes
that transfer instead of its own, so from then on it applies and acks version v with the bytes of an older version:
its weights are one subset send behind what it reports, silently. The implementer mirrored the Unix profile, where a
version written into a slot is in every receiver's view of that slot, and the comment above the publish loop ("every
group gets each version, so that a joiner on any device starts from the latest", LIFE-1): the data plane is each
network receiver's copy of its group's slots, so each version is sent to all of them. Breaks NET-2 ("A subset send
transfers to its targets only"; "For the version of Init and for each Receive sent to it, in order, the sender
sends one transfer") and ACK-3 ("Ack(r, v, ok) promises that r's weights equal, bit for bit, the bytes the sender
published as version v").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import publishing as _publishing

VIOLATES = ("NET-2", "ACK-3")

_publish = _publishing.Publisher.publish


def publish(self, weights, workers, deadline):
    future = _publish(self, weights, workers, deadline)
    for peer in self.hub.peers:  # BUG: the data plane keeps every network receiver's copy of its slots current
        if peer.machine.id not in future.workers and peer.lane is not None and peer.machine.live:
            peer.lane.submit(self.version, peer.group.latest.buffer.tensor)
    return future


_publishing.Publisher.publish = publish
