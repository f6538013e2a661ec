"""Mutant: the sender's CPU slots are plain memfds, neither sealed nor reopened read-only: receivers are
handed the read-write descriptor itself ("receivers map it read-only anyway"). Any receiver can then
truncate a slot under the trainer or rewrite the bytes every other receiver reads. Violates SEC-4.

Seam: the sender's slot pool (SlotPool._allocate, which makes each slot), given a slot whose buffer is unsealed.
Sender.__init__ makes its pool by the name weightsync.sender.SlotPool, which is swapped here.
"""

import mmap
import os

from weightsync import *
from weightsync import CAPABILITIES, __all__, layout, sender, shm  # noqa: F401
from weightsync.slots import CpuSlot, Slot, SlotPool

VIOLATES = "SEC-4"
KILLED_BY = ("conformance/test_wire.py::test_slot_handles_are_read_only_and_sealed",)


class _PlainBuffer(shm.SealedBuffer):
    def __init__(self, nbytes, name="weightsync"):
        self.nbytes = nbytes
        self.handle = os.memfd_create(name, os.MFD_CLOEXEC)  # BUG: no seals, and handed out read-write
        os.ftruncate(self.handle, nbytes)
        self._mmap = mmap.mmap(self.handle, nbytes, flags=mmap.MAP_SHARED)
        self.tensor = shm._frombuffer(self._mmap)


class _PlainSlot(CpuSlot):
    def __init__(self, sid, device, nbytes, manifest):
        Slot.__init__(self, sid, device, nbytes, manifest)
        self.buffer = _PlainBuffer(nbytes, name=f"weightsync-slot{sid}")
        self._packer = layout.Packer(self.buffer.tensor, manifest)
        self.views = self._packer.views


class _PlainPool(SlotPool):
    def _allocate(self, group):
        if group.device.type != "cpu":
            return super()._allocate(group)
        slot = _PlainSlot(self._next_id, group.device, group.nbytes, group.manifest)
        self._next_id += 1
        group.slots.append(slot)
        return slot


sender.SlotPool = _PlainPool  # BUG: the pool the sender makes hands out unsealed slots
