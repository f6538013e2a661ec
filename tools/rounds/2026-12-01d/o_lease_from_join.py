"""Bug: the sender starts a network receiver's lease when the receiver joins (its Welcome, when the connection
becomes receiver i's channel) and does not start it again at the Init. The implementer attached the lease to the
channel where the channel is adopted, which reads naturally as "from the join on" (NET-4's words for heartbeats),
and took the Init that follows "at once" (RDV-5) for the same moment. It is not: the Init waits for the receiver's
data-plane store, which torch starts with a reverse DNS lookup (seconds on a host whose resolver drops queries, as
netplane.py notes). The joiner cannot speak before its Init tells it the lease, so a store that takes longer than
the lease to start makes the sender name the receiver gone ("lease expired") the moment its Init is out: that
worker can never join.

Breaks NET-4 ("The sender ... counts a receiver's lease from the Init it sent it (where the receiver learns the
lease)").
"""
import weakref

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, netplane, publishing  # noqa: F401
from weightsync.slots import CpuSlot

VIOLATES = ("NET-4",)


def _send_network_init(self, peer):
    hub, group = self.hub, peer.group
    channel, latest = peer.channel, group.latest
    assert channel is not None and hub.listener is not None
    assert isinstance(latest, CpuSlot)
    left, peer.store_made = peer.store_made, None
    if left is None:
        ref = weakref.ref(hub)

        def made(store):
            held = ref()
            if held is None or held.closed:
                if isinstance(store, netplane.Store):
                    store.close()
                return
            peer.store_made = (channel, store)
            held.wake()

        netplane.make_store(hub.listener.address.sockaddr[0], hub.transfer_timeout, hub.lease, made)
        return
    made_for, store = left
    if hub.closed or made_for is not channel or channel.closed or not peer.machine.init_due(True):
        if isinstance(store, netplane.Store):
            store.close()
        return
    if isinstance(store, Exception):
        publishing.log.error("receiver %d: its data-plane store could not be made: %s", peer.machine.id, store)
        channel.close()
        return
    # BUG: no hub.use(...) here: the lease attached when the channel was adopted at the join runs on
    local = channel.sock.getsockname()[0]
    plane = store.data_plane(local, group.nbytes)
    at, known = peer.profile.stands_for(latest.id, [s.id for s in group.slots])
    hub.write(peer, peer.profile.init(peer.machine.id, group.manifest, group.infos(), self.version, latest.id, plane),
              slot=at, slots=known)
    incarnation, ref = peer.machine.incarnation, weakref.ref(hub)

    def failed(why):
        held = ref()
        if held is not None:
            held.lane_failed(peer, incarnation, why)

    peer.lane = netplane.Lane(store, plane, local, failed, hub.clock)
    peer.lane.submit(self.version, latest.buffer.tensor)


publishing.Publisher._send_network_init = _send_network_init
publishing._INITS[publishing.NetworkProfile] = _send_network_init
