"""Mutant, written apart from the suite: every receiver gets its own group of slots ("a double buffer per worker"),
so each update is copied once per receiver instead of once per device. Everything else works.
Violates LAYOUT-2 ("an update costs one batched copy per device, never one per receiver")
and CUDA-1 ("MUST copy each version once per slot device, never once per receiver").

Seam: the sender's slot pool (SlotPool.groups), given one group per receiver instead of one per device.
"""

import functools

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = ("LAYOUT-2", "CUDA-1")
KILLED_BY = ("conformance/test_consistency.py::test_receivers_on_one_device_read_one_copy_of_a_version",)


class Sender(_Sender):
    @functools.wraps(_Sender.__init__)  # the public signature stays the reference's (API-1)
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        pool, shared = self._hub.pool, list(self._hub.pool.groups.values())
        pool.groups = {}
        for peer in self._hub.peers:  # BUG: a group, and so a copy of each version, per receiver
            g0 = peer.group
            group = pool.add_group(g0.device, g0.nbytes, g0.manifest)
            pool.groups[peer.machine.id] = pool.groups.pop(g0.device)
            group.slots[0].write(list(g0.latest.views))
            pool.publish(group, group.slots[0], 0)
            peer.group = group
        for g0 in shared:
            for slot in g0.slots:
                slot.close()
