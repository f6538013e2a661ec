"""Bug: `send(workers=[])` and `send_async(workers=[])` send to every receiver instead of raising ValueError:
the sender picks its targets with the idiomatic falsy test (`list(range(n)) if not workers else ...`), so an
empty list reads as "no selection given". A trainer that computes its targets (`workers=[i for i in ids if
healthy[i]]`) and gets an empty list publishes a version to every worker, the ones it meant to leave out
included, and is never told that its selection was empty. The implementer read API-2's "`workers=None`
targets every receiver" as "no workers given targets every receiver". Breaks SEND-6 ("`workers` names
distinct valid receiver ids, at least one; anything else raises ValueError before anything is written"),
VER-2 ("A send that is rejected before publishing MUST NOT consume a version").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout, options  # noqa: F401
from weightsync.future import SendFuture
from weightsync.packing import Packed
from weightsync.publishing import Publisher

VIOLATES = ("SEND-6", "VER-2")


def publish(self, weights, workers, deadline):
    hub, peers = self.hub, self.hub.peers
    started = hub.clock()
    # BUG: an empty list is taken for "no workers given", i.e. every receiver.
    targets = list(range(len(peers))) if not workers else options.check_workers(workers, len(peers))
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
    ids = {}
    for group, slot in chosen.items():
        hub.pool.publish(group, slot, self.version)
        ids[group] = [s.id for s in group.slots]
    early = []
    self._early = early
    try:
        self._announce(targets, chosen, ids)
    finally:
        self._early = None
        future = SendFuture(self.version, targets, hub.take_arrived_if_free, self.wait,
                            nbytes=sum([group.nbytes for group in chosen]), clock=hub.clock)
        self.futures[self.version] = future
        for rid, cause, detail in early:
            self.settle(self.version, rid, cause, detail)
    future._published_after(hub.clock() - started)
    return future


Publisher.publish = publish
