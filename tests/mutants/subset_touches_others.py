"""Mutant: a send to some receivers also pushes the new version to every other live one ("keep everyone
current"). Violates CONS-5.

Seam: Publisher.publish, wrapped: after the targets, every other live receiver is sent a Receive too.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.messages import Receive
from weightsync.protocol import PeerState
from weightsync.publishing import Publisher

VIOLATES = "CONS-5"
KILLED_BY = ("conformance/test_consistency.py::test_subset_send_leaves_others_alone[sync-mapping]",)


_publish = Publisher.publish


def _publish_to_everyone(self, weights, workers, deadline):
    future = _publish(self, weights, workers, deadline)
    hub = self.hub
    for peer in hub.peers:  # BUG: the others too
        if peer.machine.id in future.workers or peer.machine.state is not PeerState.LIVE or peer.profile.leased:
            continue
        slot = peer.group.latest
        new_slots = [peer.group.slot(sid) for sid in peer.machine.unknown(s.id for s in peer.group.slots)]
        hub.write(peer, Receive(future.version, slot.id, tuple(s.info() for s in new_slots)),
                  peer.group.handles(new_slots))
    return future


Publisher.publish = _publish_to_everyone
