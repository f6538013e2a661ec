"""Bug: a send checks its targets once, when it is called, and not again after it waited for a free slot. A target
that dies (or is dropped) while the send waits is treated as one that died after publication: the version is
published to the others and fails for it with ReceiverDiedError carrying the new version, and `sender.version`
advances. A trainer that reads `.version` to tell "published, then a worker died" (the others hold it now) from
"nothing was published" (retry the same step) takes a send that should have been rejected for published, and its
version counter moves on past a send SEND-4 refuses. A careful implementer could have written it from SEND-4's "A send
that targets a receiver known to be gone ... raises before anything is written", reading "known" as "known when the
call was made" and the slot wait as part of publishing (the version's bytes are being prepared). Breaks SEND-4
("raises before anything is written ... with their causes and `.version` None") and VER-2 ("Rejections before
publishing include ... a target that is ... gone").
"""
import weightsync  # noqa: F401
import weightsync.publishing as _publishing
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout, options  # noqa: F401
from weightsync.errors import FIX, SyncTimeoutError
from weightsync.future import SendFuture
from weightsync.packing import Packed
from weightsync.sending import outbox_full, readers
from weightsync.slots import CpuSlot

VIOLATES = ("SEND-4", "VER-2")


def free_slots(self, targets, deadline):
    hub, peers = self.hub, self.hub.peers
    while True:
        # BUG: the targets were checked when the send was called; no re-check after a wait
        stuck = [i for i in targets if (ch := peers[i].channel) is not None and outbox_full(ch.out_bytes)]
        chosen = {}
        full = None
        for group in hub.pool.groups.values():
            slot = hub.pool.choose(group, [p.machine.pins() for p in peers if p.group is group])
            if slot is None:
                full = group
                break
            chosen[group] = slot
        if full is None and not stuck:
            return chosen
        if deadline.expired():
            if stuck:
                raise SyncTimeoutError(stuck, None, hint="it does not read its channel; nothing was published (SEC-3)")
            machines = [p.machine for p in peers if p.group is full]
            blocking = sorted({i for s in full.slots for i in readers(s.id, machines)})
            raise SyncTimeoutError(blocking, None, hint=f"every one of {hub.pool.max_slots} slots is held by them; "
                                   f"nothing was published (SLOT-3). {FIX}pass a longer timeout=")
        hub.wait_for_events(deadline)


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
        if not peer.machine.live:  # BUG: it went while we waited for a slot: it fails this version, as if after
            future._settle(i, peer.machine.cause, peer.machine.failure)
            continue
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
    if future._complete:
        self.futures.pop(self.version, None)
    future._published_after(hub.clock() - started)
    return future


_publishing.Publisher.free_slots = free_slots
_publishing.Publisher.publish = publish
