"""Buffer slots on each device, the pool that hands out free ones, and how a receiver maps them.

The pool owns allocation and the choice of a slot to write (SLOT-1..SLOT-3),
using the pure rule of sending.free_slot with the pins the receivers' machines
report. A CPU slot is a sealed memfd mapped into every process; its handle is
a read-only file descriptor that travels beside the message (WIRE-4, SEC-4). A CUDA slot is one device
allocation shared through CUDA IPC; its handle is the IPC tuple, plus an
interprocess event recorded after each write, which a receiver's stream
waits on before it reads: publication is stream-ordered, with no device-wide
synchronize (CUDA-2), and the device travels by UUID (CUDA-1).

A CUDA slot's `ipc` array (CUDA-5): the eight values of torch's `_share_cuda_()`
(device index, allocation handle, size, offset, reference-count handle and offset,
torch's event handle and whether to wait on it), the slot event's handle, and the
device's UUID.
"""

from __future__ import annotations

import collections
import os
import weakref
from collections.abc import Callable, Sequence

import torch

from . import layout, limits, shm
from .messages import Entry, SlotInfo
from .sending import free_slot

# CUDA slots of senders in this process, by (IPC handle, offset): a process cannot open
# its own IPC handles, so a receiver in the sender's process looks here first. The handle
# names the allocator's whole segment, which small slots share; the offset tells them apart.
_LOCAL_CUDA: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
# A receiver may still wait on a slot's event after the sender closed (an apply of a
# version sent just before close()), and using an imported event whose exporter has
# destroyed it is undefined behaviour: the newest retired events outlive their slots.
_RETIRED_EVENTS: collections.deque = collections.deque(maxlen=1024)
#: Where a CUDA slot's values sit in its `ipc` array.
_SHARE, _EVENT, _UUID = slice(0, 8), 8, 9


def ipc_key(ipc: Sequence) -> tuple:
    """What identifies a CUDA slot's bytes among the slots of one process: the segment's handle and the offset in it."""
    share = ipc[_SHARE]
    return share[1], share[3]


def device_uuid(device: torch.device) -> str:
    return str(torch.cuda.get_device_properties(device).uuid)


def local_index(uuid: str, index: int, visible: Sequence[str]) -> int:
    """The index, among the devices this process sees, of the sender's device (CUDA-1).

    By UUID when the sender named one, since CUDA_VISIBLE_DEVICES may hide or reorder
    devices per process; by the sender's index only when it did not.
    """
    if not uuid:
        return index
    if uuid in visible:
        return visible.index(uuid)
    raise ValueError(f"no CUDA device visible here has the slot's UUID {uuid} (CUDA-7): this process sees "
                     f"{len(visible)} device(s); check CUDA_VISIBLE_DEVICES")


def _visible_uuids() -> list[str]:
    return [device_uuid(torch.device("cuda", i)) for i in range(torch.cuda.device_count())]


def _expandable_segments() -> bool:
    conf = ",".join(os.environ.get(k, "") for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"))
    return "expandable_segments:true" in conf.replace(" ", "").lower()


def _allocate_shareable(nbytes: int, device: torch.device) -> torch.Tensor:
    """Zeroed bytes in a plain cudaMalloc segment, so that their IPC handle is a classic one.

    With expandable segments, torch shares memory through file descriptors that a
    receiver fetches with pidfd_getfd, which many containers refuse; slots are
    allocated with that setting off, and it is restored at once.
    """
    toggle = _expandable_segments() and hasattr(torch.cuda.memory, "_set_allocator_settings")
    if toggle:
        torch.cuda.memory._set_allocator_settings("expandable_segments:False")
    try:
        return torch.zeros(nbytes, dtype=torch.uint8, device=device)
    finally:
        if toggle:
            torch.cuda.memory._set_allocator_settings("expandable_segments:True")


class Slot:
    """One version's worth of bytes on one device."""

    def __init__(self, sid: int, device: torch.device, nbytes: int, manifest, cast: bool = False):
        self.id = sid
        self.device = device
        self.nbytes = nbytes
        self.version: int | None = None
        self._manifest = manifest
        self.cast = cast  # its floating dtypes are not the weights' (LAYOUT-3): no byte copy of a packed buffer
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

    def _laid_like(self, buffer: torch.Tensor) -> bool:
        """Whether a packed buffer holds this slot's bytes as they are: same size and no cast (API-8, LAYOUT-3)."""
        return not self.cast and buffer.numel() == self.nbytes

    def close(self) -> None:
        self.views = []


class CpuSlot(Slot):
    def __init__(self, sid, device, nbytes, manifest, source=None, cast=False):
        super().__init__(sid, device, nbytes, manifest, cast)
        self.buffer = shm.SealedBuffer(nbytes, name=f"weightsync-slot{sid}")
        self._packer = layout.Packer(self.buffer.tensor, manifest, source, cast)
        self.views = self._packer.views

    def handles(self) -> tuple[int, ...]:
        return (self.buffer.handle,)

    def write(self, tensors: list[torch.Tensor]) -> None:
        self._packer.write(tensors)

    def write_buffer(self, buffer: torch.Tensor, tensors: list[torch.Tensor]) -> None:
        if self._laid_like(buffer):  # one copy, from any device: the layouts are the same
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

    def __init__(self, sid: int, device: torch.device, nbytes: int, manifest: Sequence[Entry], cast: bool = False,
                 source: torch.device | None = None):
        super().__init__(sid, device, nbytes, manifest, cast)
        # The weights live on one device (the sender refuses more), checked against the manifest at each
        # send: its stream is the one to order the copy after, and none when they are on the CPU.
        source = torch.device(source or device)
        self._sources = [source] if source.type == "cuda" else []
        self.event = torch.cuda.Event(interprocess=True)
        side = self._stream()
        with torch.cuda.stream(side):  # the zero fill and every write on one stream: writes follow the fill
            self.tensor: torch.Tensor | None = _allocate_shareable(nbytes, device)  # None once closed
            self.event.record(side)
        # Weights on this GPU are gathered run by run, as on the CPU (one kernel for a run of small
        # arrays instead of one copy each); from elsewhere, or cast, array by array.
        self._packer: layout.Packer | None = layout.Packer(self.tensor, manifest, source, cast)
        self.views = self._packer.views
        self._holder: _CudaHolder | None = _CudaHolder(self.tensor, self.event)
        self._uuid = device_uuid(device)

    def _stream(self) -> torch.cuda.Stream:
        if self.device not in CudaSlot._streams:
            CudaSlot._streams[self.device] = torch.cuda.Stream(self.device)
        return CudaSlot._streams[self.device]

    def info(self) -> SlotInfo:
        # A fresh share per receiver: each carries its own IPC reference count.
        assert self.tensor is not None, "a closed sender describes no slot"
        share = self.tensor.untyped_storage()._share_cuda_()
        ipc = (*share, self.event.ipc_handle(), self._uuid)
        _LOCAL_CUDA[ipc_key(ipc)] = self._holder
        return SlotInfo(self.id, str(self.device), self.nbytes, ipc)

    def write(self, tensors: list[torch.Tensor]) -> None:
        packer = self._packer
        assert packer is not None, "a closed sender writes no slot"
        self._copy(lambda: packer.write(tensors))

    def write_buffer(self, buffer: torch.Tensor, tensors: list[torch.Tensor]) -> None:
        if self._laid_like(buffer):  # one copy, from any device: the layouts are the same (API-8)
            slot = self.tensor
            assert slot is not None, "a closed sender writes no slot"
            self._copy(lambda: slot.copy_(buffer.detach(), non_blocking=True))
        else:
            self.write([t.detach() for t in tensors])

    def _copy(self, copy: Callable[[], object]) -> None:
        """Runs `copy` on a side stream ordered after the weights' producers, then records the event (CUDA-2).

        The streams that produce the weights then wait for the copy, so the trainer's next writes
        to its tensors, and any reuse of their memory by the allocator (which happens on
        those streams), follow the read: no record_stream is needed. The side stream comes
        from torch's pool and may be one the trainer also uses; that adds ordering, never
        removes any.
        """
        side = self._stream()
        sources = self._sources
        for dev in sources:
            side.wait_stream(torch.cuda.current_stream(dev))
        with torch.no_grad(), torch.cuda.stream(side):
            copy()
            self.event.record(side)
        for dev in sources:
            torch.cuda.current_stream(dev).wait_stream(side)
        if not sources:
            side.synchronize()  # a CPU source may change as soon as we return

    def close(self) -> None:
        super().close()
        self.tensor = None
        self._packer = None  # its views hold the allocation too
        self._holder = None
        _RETIRED_EVENTS.append(self.event)


def make_slot(sid: int, device: torch.device, nbytes: int, manifest, source: torch.device | None = None,
              cast: bool = False) -> Slot:
    """A slot on `device` for weights that live on `source` (by default the same device); `cast` when its
    manifest's floating dtypes are not the weights' (LAYOUT-3)."""
    if device.type == "cuda":
        return CudaSlot(sid, device, nbytes, manifest, cast, source)  # its writes are _foreach_copy_, which casts
    return CpuSlot(sid, device, nbytes, manifest, source, cast)


class Group:
    """The slots of one device; the receivers whose slot device it is read only these."""

    def __init__(self, device: torch.device, nbytes: int, manifest, source: torch.device | None = None,
                 cast: torch.dtype | None = None):
        self.device = device
        self.nbytes = nbytes
        self.manifest = manifest
        self.source = source  # where the weights written into these slots live
        self.cast = cast  # the floating dtype these slots hold when it is not the weights' (LAYOUT-3)
        self.slots: list[Slot] = []
        self.latest: Slot | None = None

    def slot(self, sid: int) -> Slot:
        """Its slot `sid` (a group holds a few: a loop is quicker than a map kept in step)."""
        for s in self.slots:
            if s.id == sid:
                return s
        raise KeyError(f"no slot {sid} in this group")

    def infos(self) -> tuple[SlotInfo, ...]:
        return tuple(s.info() for s in self.slots)

    def handles(self, slots) -> tuple[int, ...]:
        return tuple(fd for s in slots for fd in s.handles())


def slot_bound(nbytes: int, num_workers: int, max_slots: int | None, max_slot_bytes: int | None) -> int:
    """How many slots one slot device may hold (SLOT-3): `max_slots`, by default N+2 but
    LARGE_SLOT_COPIES for a slot above LARGE_SLOT, lowered to what `max_slot_bytes` holds.

    N+2 lets every receiver pin a slot while the latest and the next are free; a large
    model cannot afford that, and three slots still let a send be written while one
    version is latest and another pending."""
    if max_slots is None:
        max_slots = num_workers + 2
        if nbytes > limits.LARGE_SLOT:
            max_slots = min(max_slots, limits.LARGE_SLOT_COPIES)
    elif isinstance(max_slots, bool) or not isinstance(max_slots, int) or max_slots < 2:
        raise ValueError(f"max_slots must be an int of at least 2 (SLOT-1), got {max_slots!r}")
    if max_slot_bytes is None:
        return max_slots
    if isinstance(max_slot_bytes, bool) or not isinstance(max_slot_bytes, int) or max_slot_bytes < 2 * nbytes:
        raise ValueError(f"max_slot_bytes must be an int of at least two slots, {2 * nbytes} bytes here (SLOT-1, "
                         f"SLOT-3), got {max_slot_bytes!r}")
    return min(max_slots, max_slot_bytes // max(nbytes, 1))


class SlotPool:
    """Every slot of the sender, one group per slot device, at most `max_slots` per group (SLOT-3).

    A group is keyed by its device, or by (device, dtype) when its slots are cast (LAYOUT-3)."""

    def __init__(self, max_slots: int):
        self.max_slots = max_slots
        self.groups: dict[object, Group] = {}
        self._next_id = 0

    @staticmethod
    def key(device: torch.device, cast: torch.dtype | None) -> object:
        return device if cast is None else (device, cast)

    def add_group(self, device: torch.device, nbytes: int, manifest, source: torch.device | None = None,
                  cast: torch.dtype | None = None) -> Group:
        group = Group(device, nbytes, manifest, source, cast)
        self.groups[self.key(device, cast)] = group
        for _ in range(2):  # SLOT-1: at least two per device
            self._allocate(group)
        return group

    def _allocate(self, group: Group) -> Slot:
        slot = make_slot(self._next_id, group.device, group.nbytes, group.manifest, group.source, group.cast is not None)
        self._next_id += 1
        group.slots.append(slot)
        return slot

    def choose(self, group: Group, pins) -> Slot | None:
        """A slot nobody may read, a new one while the group is under its bound, else None (SLOT-2, SLOT-3)."""
        sid = free_slot([s.id for s in group.slots], group.latest.id if group.latest else None, pins)
        if sid is not None:
            return group.slot(sid)
        if len(group.slots) < self.max_slots:
            return self._allocate(group)
        return None

    @staticmethod
    def publish(group: Group, slot: Slot, version: int) -> None:
        slot.version = version
        group.latest = slot

    def close(self) -> None:
        cuda = any(g.device.type == "cuda" for g in self.groups.values())
        for group in self.groups.values():
            for slot in group.slots:
                slot.close()
            group.slots = []
        if cuda:  # return the slots no receiver maps any more; the others once their last mapping goes (CUDA-4)
            torch.cuda.ipc_collect()


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
    torch.cuda._lazy_init()
    share, event_handle = list(info.ipc[_SHARE]), info.ipc[_EVENT]
    uuid = info.ipc[_UUID] if len(info.ipc) > _UUID else ""  # a 1.1 sender names no UUID
    device = torch.device("cuda", local_index(uuid, torch.device(info.device).index or 0, _visible_uuids()))
    local = _LOCAL_CUDA.get(ipc_key(info.ipc))
    if local is not None:
        # The share counted one more reader of the allocation; this one reads it directly and
        # holds it through `local`, so that count is returned now (else the memory stays
        # reserved after close() and torch warns at exit) (CUDA-4, CUDA-5).
        torch.UntypedStorage._release_ipc_counter(share[4], share[5], device=device)
        return Mapped(local.tensor, local.event, local)
    share[0] = device.index
    storage = torch.UntypedStorage._new_shared_cuda(*share)
    tensor = torch.empty(0, dtype=torch.uint8, device=device).set_(storage, 0, (info.nbytes,), (1,))
    event = torch.cuda.Event.from_ipc_handle(device, event_handle)
    return Mapped(tensor, event, storage)
