"""Bug: `send()` and `send_async()` without `workers` target every receiver except those not connected yet
(unconnected or connecting), where SEND-4 wants LocalProtocolError. The implementer reasoned from LIFE-1: a
receiver that connects later starts from the latest version anyway, so leaving the not-yet-connected ones out
of a default send loses nothing and saves the trainer a `workers=` list while its workers come up (gone and
failed receivers are still targeted, and named, as SEND-4 says). But a worker whose `connect()` timed out (its
process crashed before it called `Receiver.connect()`, or hangs in its handshake) is then skipped by every
send, silently: `send()` returns the version as if every worker held it, and the trainer never learns that
one of its N workers runs nothing.

Breaks SEND-4: "A send that targets a receiver known to be gone, failed or not connected raises before
anything is written: ... for targets not connected yet (unconnected or connecting), LocalProtocolError", with
API-2's `workers=None` targeting every receiver (and so SEND-1: send() returns only when every target acked).
"""
from __future__ import annotations

from collections.abc import Iterable

import weightsync.publishing as _publishing
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.clock import Deadline
from weightsync.publishing import CpuSlot, Group, Packed, SendFuture, layout, options

VIOLATES = ("SEND-4", "SEND-1")


def publish(self, weights: layout.Weights | None, workers: Iterable[int] | None,
            deadline: Deadline) -> SendFuture:
    """Writes a new version into a free slot per group and sends it to `workers` (SEND-1); the lock is held."""
    hub, peers = self.hub, self.hub.peers
    started = hub.clock()
    # BUG: by default, receivers not connected yet are left out: they start from the latest when they connect
    targets = ([i for i, p in enumerate(peers) if not p.machine.waiting] if workers is None
               else options.check_workers(workers, len(peers)))
    hub.take_arrived()
    source = self.source if weights is None else weights
    # weights laid out like the slots: one copy (API-8); a plain dict is looked at first (Packed is an ABC's)
    packed = (source if type(source) is not dict and isinstance(source, Packed)
              and (source is self.source or source.manifest == self.manifest) else None)
    if packed is not None:
        packed.check()  # constant time unless a packed tensor may have left the buffer (API-8)
    else:  # a plain dict goes straight to the checker, which rejects what flatten would (BAD-1, BAD-2)
        tensors = self.checker.ordered(source if type(source) is dict else layout.flatten(source))
    self.check_targets(targets)
    chosen = self.free_slots(targets, deadline)  # group -> slot
    for slot in chosen.values():
        if packed is not None:
            slot.write_buffer(packed.buffer, packed.tensors)  # a cast slot converts each array (LAYOUT-3)
            continue
        try:
            slot.write(tensors)
        except RuntimeError:
            # A tensor reshaped through `.data` as a view of itself keeps its pointer and version:
            # the copy into the free slot finds it; check everything and name it (BAD-2). The slot
            # is free, nobody reads it, and nothing is published.
            self.checker.forget()
            self.checker.ordered(source if type(source) is dict else layout.flatten(source))
            raise
    self.version += 1
    future = SendFuture(self.version, targets, hub.take_arrived_if_free, self.wait,
                        nbytes=sum([group.nbytes for group in chosen]), clock=hub.clock)
    self.futures[self.version] = future
    # Every group gets each version, once per device, so that a joiner on any
    # device starts from the latest (LIFE-1, LAYOUT-2).
    ids: dict[Group, list[int]] = {}
    for group, slot in chosen.items():
        hub.pool.publish(group, slot, self.version)
        ids[group] = [s.id for s in group.slots]
    for i in targets:
        peer = peers[i]
        group = peer.group
        slot = chosen[group]
        unknown = peer.machine.unknown(ids[group])  # most sends introduce nothing
        new_slots = [group.slot(sid) for sid in peer.profile.introduced(unknown)] if unknown else []
        msg = peer.profile.receive(self.version, slot.id, tuple([s.info() for s in new_slots]) if new_slots else ())
        at, known = peer.profile.stands_for(slot.id, ids[group])  # what slot 0 stands for (NET-1)
        hub.write(peer, msg, group.handles(new_slots) if new_slots else (), slot=at, slots=known)
        if peer.lane is not None:  # the version follows on its data plane (NET-2)
            assert isinstance(slot, CpuSlot), "the network profile carries CPU slots only"
            peer.lane.submit(self.version, slot.buffer.tensor)
    future._published_after(hub.clock() - started)
    return future


_publishing.Publisher.publish = publish
