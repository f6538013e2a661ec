"""Buffer slots on each device, the pool that hands out free ones, and how a receiver maps them.

The pool owns allocation and the choice of a slot to write (SLOT-1..SLOT-3),
using the pure rule of protocol.free_slot with the pins the receivers' machines
report. A CPU slot is a sealed memfd mapped into every process; its handle is
a read-only file descriptor that travels beside the message (WIRE-4, SEC-4). A CUDA slot is one device
allocation shared through CUDA IPC; its handle is the IPC tuple, plus an
interprocess event recorded after each write, which a receiver's stream
waits on before it reads: publication is stream-ordered, with no device-wide
synchronize (CUDA-2).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import torch

from . import layout, shm
from .messages import Entry, SlotInfo
from .protocol import free_slot

# CUDA slots of senders in this process, by IPC handle: a process cannot open its
# own IPC handles, so a receiver in the sender's process looks here first.
_LOCAL_CUDA: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class Slot:
    """One version's worth of bytes on one device."""

    def __init__(self, sid: int, device: torch.device, nbytes: int, manifest):
        self.id = sid
        self.device = device
        self.nbytes = nbytes
        self.version: int | None = None
        self._manifest = manifest
        self.views: list[torch.Tensor] = []

    def info(self) -> SlotInfo:
        return SlotInfo(self.id, str(self.device), self.nbytes)

    def handles(self) -> tuple[int, ...]:
        return ()

    def write(self, tensors: list[torch.Tensor]) -> None:
        with torch.no_grad():
            torch._foreach_copy_(self.views, tensors)

    def write_buffer(self, buffer: torch.Tensor, tensors: list[torch.Tensor]) -> None:
        """Writes packed weights: their buffer has the slot's layout, so this is one copy (API-8)."""
        self.write([t.detach() for t in tensors])

    def close(self) -> None:
        self.views = []


class CpuSlot(Slot):
    def __init__(self, sid, device, nbytes, manifest):
        super().__init__(sid, device, nbytes, manifest)
        self.buffer = shm.SealedBuffer(nbytes, name=f"weightsync-slot{sid}")
        self._packer = layout.Packer(self.buffer.tensor, manifest)
        self.views = self._packer.views

    def handles(self) -> tuple[int, ...]:
        return (self.buffer.handle,)

    def write(self, tensors: list[torch.Tensor]) -> None:
        self._packer.write(tensors)

    def write_buffer(self, buffer: torch.Tensor, tensors: list[torch.Tensor]) -> None:
        if buffer.device.type == "cpu" and buffer.numel() == self.nbytes:
            self.buffer.tensor.copy_(buffer)
        else:
            self.write([t.detach() for t in tensors])

    def close(self) -> None:
        super().close()
        self._packer = None
        self.buffer.close()


class _CudaHolder:
    """What the local registry points at (weak references need a plain object)."""

    def __init__(self, tensor, event):
        self.tensor = tensor
        self.event = event


class CudaSlot(Slot):
    """A device allocation kept alive by the sender until close() (CUDA-4)."""

    _streams: dict[torch.device, torch.cuda.Stream] = {}

    def __init__(self, sid: int, device: torch.device, nbytes: int, manifest: Sequence[Entry]):
        super().__init__(sid, device, nbytes, manifest)
        self.tensor: torch.Tensor | None = torch.zeros(nbytes, dtype=torch.uint8, device=device)  # None once closed
        self.event = torch.cuda.Event(interprocess=True)
        self.event.record(torch.cuda.current_stream(device))
        self.views = layout.views(self.tensor, manifest)
        self._holder: _CudaHolder | None = _CudaHolder(self.tensor, self.event)
        self._handle: bytes | None = None

    def _stream(self) -> torch.cuda.Stream:
        if self.device not in CudaSlot._streams:
            CudaSlot._streams[self.device] = torch.cuda.Stream(self.device)
        return CudaSlot._streams[self.device]

    def info(self) -> SlotInfo:
        # A fresh share per receiver: each carries its own IPC reference count.
        assert self.tensor is not None, "a closed sender describes no slot"
        share = self.tensor.untyped_storage()._share_cuda_()
        self._handle = share[1]
        _LOCAL_CUDA[share[1]] = self._holder
        return SlotInfo(self.id, str(self.device), self.nbytes, (*share, self.event.ipc_handle()))

    def write(self, tensors: list[torch.Tensor]) -> None:
        """Copies on a side stream ordered after the producers of `tensors`, then records the event."""
        side = self._stream()
        sources = {t.device for t in tensors if t.is_cuda}
        for dev in sources:
            side.wait_stream(torch.cuda.current_stream(dev))
        with torch.no_grad(), torch.cuda.stream(side):
            torch._foreach_copy_(self.views, tensors, non_blocking=True)
            self.event.record(side)
        for dev in sources:  # the caller's next writes to its tensors wait for this read
            torch.cuda.current_stream(dev).wait_stream(side)
        if not sources:
            side.synchronize()  # a CPU source may change as soon as we return

    def close(self) -> None:
        super().close()
        self.tensor = None
        self._holder = None


def make_slot(sid: int, device: torch.device, nbytes: int, manifest) -> Slot:
    cls = CudaSlot if device.type == "cuda" else CpuSlot
    return cls(sid, device, nbytes, manifest)


class Group:
    """The slots of one device; the receivers whose slot device it is read only these."""

    def __init__(self, device: torch.device, nbytes: int, manifest):
        self.device = device
        self.nbytes = nbytes
        self.manifest = manifest
        self.slots: list[Slot] = []
        self.latest: Slot | None = None

    def infos(self) -> tuple[SlotInfo, ...]:
        return tuple(s.info() for s in self.slots)

    def handles(self, slots) -> tuple[int, ...]:
        return tuple(fd for s in slots for fd in s.handles())


class SlotPool:
    """Every slot of the sender, one group per slot device, at most `max_slots` per group (SLOT-3)."""

    def __init__(self, max_slots: int):
        self.max_slots = max_slots
        self.groups: dict[torch.device, Group] = {}
        self._next_id = 0

    def add_group(self, device: torch.device, nbytes: int, manifest) -> Group:
        group = Group(device, nbytes, manifest)
        self.groups[device] = group
        for _ in range(2):  # SLOT-1: at least two per device
            self._allocate(group)
        return group

    def _allocate(self, group: Group) -> Slot:
        slot = make_slot(self._next_id, group.device, group.nbytes, group.manifest)
        self._next_id += 1
        group.slots.append(slot)
        return slot

    def by_id(self, group: Group, sid: int) -> Slot:
        return next(s for s in group.slots if s.id == sid)

    def choose(self, group: Group, pins) -> Slot | None:
        """A slot nobody may read, a new one while the group is under its bound, else None (SLOT-2, SLOT-3)."""
        sid = free_slot([s.id for s in group.slots], group.latest.id if group.latest else None, pins)
        if sid is not None:
            return self.by_id(group, sid)
        if len(group.slots) < self.max_slots:
            return self._allocate(group)
        return None

    @staticmethod
    def publish(group: Group, slot: Slot, version: int) -> None:
        slot.version = version
        group.latest = slot

    def close(self) -> None:
        for group in self.groups.values():
            for slot in group.slots:
                slot.close()
            group.slots = []


class Mapped:
    """A receiver's view of one slot: its bytes and, for CUDA, the event to wait on."""

    def __init__(self, tensor: torch.Tensor, event: torch.cuda.Event | None = None, keep: object = None):
        self.tensor: torch.Tensor | None = tensor  # None once closed
        self.event = event
        self._keep = keep  # what keeps the mapping alive (SharedBuffer or IPC storage)

    def ready(self, stream: torch.cuda.Stream | None = None) -> None:
        """Orders the reader after the sender's last write of this slot (CUDA-2)."""
        if self.event is not None:
            if stream is not None:
                stream.wait_event(self.event)
            else:
                self.event.synchronize()

    def close(self) -> None:
        self.tensor = None
        self._keep = None


def map_slot(info: SlotInfo, fd: int | None) -> Mapped:
    """Maps a slot the sender described; CPU slots read-only, keeping no writable descriptor (SLOT-4)."""
    if torch.device(info.device).type != "cuda":
        if fd is None:
            raise ValueError(f"CPU slot {info.slot} lists an ipc handle: no descriptor came for it to map (WIRE-4)")
        return Mapped(shm.map_readonly(fd, info.nbytes))
    device = torch.device(info.device)
    share, event_handle = info.ipc[:-1], info.ipc[-1]
    local = _LOCAL_CUDA.get(share[1])
    if local is not None:
        return Mapped(local.tensor, local.event, local)
    torch.cuda._lazy_init()
    storage = torch.UntypedStorage._new_shared_cuda(*share)
    tensor = torch.empty(0, dtype=torch.uint8, device=device).set_(storage, 0, (info.nbytes,), (1,))
    event = torch.cuda.Event.from_ipc_handle(device, event_handle)
    return Mapped(tensor, event, storage)
