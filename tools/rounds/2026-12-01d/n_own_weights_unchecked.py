"""Bug: a send with `weights=None` (re-read the object the sender was built from, API-2) skips the check
of the weights against the manifest and only puts the tensors in manifest order; only weights passed
to the send are checked. The implementer reasoned that the sender's own weights were checked when it
was made, against the very manifest made from them, and that a shape changed since would make the copy
into the slot fail anyway (it does: that failure is then checked and named). But the object is the
caller's, and a module can change its dtype without a new Parameter: `model.half()` or
`model.to(torch.bfloat16)` reassign `.data` in place. Every later `send()` then silently converts the
new weights back to the manifest's dtype and publishes them, where the trainer's mistake had to be
rejected; a module that gained a buffer has it silently left out.

Breaks BAD-2 ("Weights whose dtype, shape, device or layout differ from the manifest entry MUST be
rejected with WeightsMismatchError naming the entry and both values") and BAD-1 (an unknown name).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout, options, publishing  # noqa: F401
from weightsync.future import SendFuture
from weightsync.packing import Packed

VIOLATES = ("BAD-2", "BAD-1")


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
    elif weights is None:
        # BUG: the sender's own weights were checked when it was made: only put them in manifest order
        flat = layout.flatten(source)
        tensors = [flat[n] for n in self.checker.names]
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
        group = peer.group
        slot = chosen[group]
        unknown = peer.machine.unknown(ids[group])
        new_slots = [group.slot(sid) for sid in peer.profile.introduced(unknown)] if unknown else []
        msg = peer.profile.receive(self.version, slot.id, tuple([s.info() for s in new_slots]) if new_slots else ())
        at, known = peer.profile.stands_for(slot.id, ids[group])
        hub.write(peer, msg, group.handles(new_slots) if new_slots else (), slot=at, slots=known)
        if peer.lane is not None:
            peer.lane.submit(self.version, slot.buffer.tensor)
    future._published_after(hub.clock() - started)
    return future


publishing.Publisher.publish = publish
