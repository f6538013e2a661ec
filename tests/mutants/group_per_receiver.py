"""Mutant, written apart from the suite: every receiver gets its own group of slots ("a double buffer per worker"),
so each update is copied once per receiver instead of once per device. Everything else works.
Violates LAYOUT-2 ("an update costs one batched copy per device, never one per receiver")
and CUDA-1 ("MUST copy each version once per slot device, never once per receiver")."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Sender as _Sender
from weightsync import layout
from weightsync.sender import SendFuture, log
from weightsync.slots import Group

VIOLATES = "LAYOUT-2"


class Sender(_Sender):
    def __init__(self, weights, num_workers, *, devices=None, ctx=None, max_slots=None):
        super().__init__(weights, num_workers, devices=devices, ctx=ctx, max_slots=max_slots)
        shared = self._groups
        self._groups = {}
        for peer in self._peers:
            g0 = peer.group
            g = Group(g0.device, g0.nbytes, g0.manifest)
            self._groups[peer.id] = g
            for _ in range(2):
                self._add_slot(g)
            g.slots[0].write(list(g0.latest.views))
            g.slots[0].version = 0
            g.latest = g.slots[0]
            peer.group = g
        for g0 in shared.values():
            for slot in g0.slots:
                slot.close()
            g0.slots = []

    def _publish(self, weights, workers, deadline):
        self._check_open()
        targets = list(range(len(self._peers))) if workers is None else self._check_workers(workers)
        self._pump(0)
        source = self._source if weights is None else weights
        tensors = self._checker.ordered(source if type(source) is dict else layout.flatten(source))
        self._check_targets(targets)
        chosen = {key: self._free_slot(group, deadline) for key, group in self._groups.items()}
        for slot in chosen.values():
            slot.write(tensors)  # one copy per receiver
        self._version += 1
        for key, slot in chosen.items():
            slot.version = self._version
            self._groups[key].latest = slot
        future = SendFuture(self, self._version, targets)
        self._pending.append(future)
        for i in targets:
            self._send_receive(self._peers[i], chosen[i])
        log.debug("published version %d to %s", self._version, targets)
        return future
