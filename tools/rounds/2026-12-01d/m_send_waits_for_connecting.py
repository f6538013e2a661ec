"""Bug: a send that targets a receiver still *connecting* (its Init went out, no Ready yet, e.g. its
`connect()` timed out while the worker was slow to start) waits, within the send's timeout, for that
Ready and then sends, instead of raising LocalProtocolError at once. The implementer read SEND-4's "not
connected" as "no handshake begun" (unconnected: only connect() can fix that, so it raises), and took a
connecting receiver for one about to be live, whose Ready is worth waiting for so that a send made just
after a connect() that timed out does not fail for a race. A send to every worker then blocks for its whole
timeout behind a worker hung in its handshake (for ever with `timeout=None`), raises SyncTimeoutError (a
cause that says "wait again") instead of the LocalProtocolError that says "call connect()", and when the
Ready does come the version goes to a receiver no connect() ever completed.

Breaks SEND-4 ("A send that targets a receiver known to be ... not connected raises before anything is
written ... for targets not connected yet (unconnected or connecting), LocalProtocolError").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout, options  # noqa: F401
from weightsync.errors import SyncTimeoutError
from weightsync.future import SendFuture
from weightsync.packing import Packed
from weightsync.protocol import PeerState
from weightsync.publishing import Publisher
from weightsync.slots import CpuSlot

VIOLATES = ("SEND-4",)


def _await_handshakes(self, targets, deadline):
    """BUG: connecting targets are waited for (their Ready is on its way) rather than refused."""
    peers = self.hub.peers
    while True:
        self.hub.take_arrived()
        known = [i for i in targets if peers[i].machine.ended]
        waiting = [i for i in targets if peers[i].machine.state is PeerState.CONNECTING]
        if known or not waiting:
            return  # check_targets names the failed and gone ones, and refuses the unconnected (SEND-4)
        if deadline.expired():
            raise SyncTimeoutError(waiting, None, hint="no Ready from these receivers before the timeout; "
                                   "nothing was published (SEND-4)")
        self.hub.wait_for_events(deadline)


def publish(self, weights, workers, deadline):
    hub, peers = self.hub, self.hub.peers
    started = hub.clock()
    targets = list(range(len(peers))) if workers is None else options.check_workers(workers, len(peers))
    hub.take_arrived()
    source = self.source if weights is None else weights
    packed = (source if type(source) is not dict and isinstance(source, Packed)
              and (source is self.source or source.manifest == self.manifest) else None)
    if packed is not None:
        packed.check()
    else:
        tensors = self.checker.ordered(source if type(source) is dict else layout.flatten(source))
    _await_handshakes(self, targets, deadline)  # BUG: see above
    self.check_targets(targets)
    chosen = self.free_slots(targets, deadline)
    for slot in chosen.values():
        if packed is not None:
            slot.write_buffer(packed.buffer, packed.tensors)
            continue
        try:
            slot.write(tensors)
        except RuntimeError:
            self.checker.forget()
            self.checker.ordered(source if type(source) is dict else layout.flatten(source))
            raise
    self.version += 1
    future = SendFuture(self.version, targets, hub.take_arrived_if_free, self.wait,
                        nbytes=sum([group.nbytes for group in chosen]), clock=hub.clock)
    self.futures[self.version] = future
    ids = {}
    for group, slot in chosen.items():
        hub.pool.publish(group, slot, self.version)
        ids[group] = [s.id for s in group.slots]
    for i in targets:
        peer = peers[i]
        group = peer.group
        slot = chosen[group]
        unknown = peer.machine.unknown(ids[group])
        new_slots = [group.slot(sid) for sid in peer.profile.introduced(unknown)] if unknown else []
        msg = peer.profile.receive(self.version, slot.id, tuple([s.info() for s in new_slots]) if new_slots else ())
        at, known = peer.profile.stands_for(slot.id, ids[group])
        hub.write(peer, msg, group.handles(new_slots) if new_slots else (), slot=at, slots=known)
        if peer.lane is not None:
            assert isinstance(slot, CpuSlot)
            peer.lane.submit(self.version, slot.buffer.tensor)
    future._published_after(hub.clock() - started)
    return future


Publisher.publish = publish
