"""How a receiver makes its weights equal one version: the apply strategies (ACK-3, ACK-7, ZC-1, CUDA-3).

- Copy into a target (module, TensorDict or mapping): the target's tensors are
  checked as they are at each apply (ACK-7), then written in one batched copy.
- Copy into tensors of its own (no target): views of one buffer laid out like
  a CPU slot, so an apply is one copy however many arrays there are.
- Zero-copy: the weights are read-only views of the slot itself; a module
  target has its tensors rebound to them (ZC-1).

CUDA slots are read on the receiver's own stream, ordered after the sender's
event and after the GPU work its readers queued inside reading() (a ReadFence), and
that stream is synchronized before the ack releases the slot (CUDA-2, CUDA-3). A
strategy never takes locks: the receiver calls it at a safe point.
"""

from __future__ import annotations

import torch

from . import layout
from .errors import WeightsMismatchError
from .messages import Init
from .packing import Packed
from .slots import Mapped


class ReadFence:
    """Where a CUDA receiver's readers left their GPU work (CUDA-3).

    Kernels a reader queues inside reading() may still run after the block ends; an
    apply must not overwrite the weights, nor an ack release a slot, before they finish.
    Each block's end records an event on the reading thread's current stream (one event
    per stream, re-recorded: a later record covers the earlier work of its stream). An
    apply then waits for those events: on its stream when it copies, on the host when
    zero-copy views are about to be given up. connect() records once for the caller's
    thread, so the first apply follows the target's own initialisation.
    """

    def __init__(self, device: torch.device | None):
        self.device = device if device is not None and device.type == "cuda" else None
        self._events: dict[int, torch.cuda.Event] = {}

    def record(self) -> None:
        if self.device is None:
            return
        stream = torch.cuda.current_stream(self.device)
        # setdefault is atomic: two threads on one stream record the same event, never a lost one
        self._events.setdefault(stream.cuda_stream, torch.cuda.Event()).record(stream)

    def order(self, stream: torch.cuda.Stream) -> None:
        """Queues on `stream` a wait for the readers' work (no host wait)."""
        for event in list(self._events.values()):
            stream.wait_event(event)

    def wait(self) -> None:
        """Returns once the readers' work is done."""
        for event in list(self._events.values()):
            event.synchronize()


class Strategy:
    """Holds the weights of one receiver; `apply` switches them to the version in a slot."""

    def __init__(self, rid: int, checker: layout.Checker, target):
        self.rid = rid
        self.checker = checker
        self.target = target
        self.fence = ReadFence(None)  # make() gives a CUDA receiver its own

    def targets(self, rule: str = "ACK-7") -> list[torch.Tensor]:
        """The target's tensors in manifest order, checked as they are now (INIT-3, ACK-7).

        Read afresh on every call: the caller may have replaced a tensor or assigned
        its `.data`, and an apply must not write a target that no longer matches.
        """
        try:
            return self.checker.ordered(layout.flatten(self.target, detach=False), allow_grad=True)
        except WeightsMismatchError as e:
            raise WeightsMismatchError(f"the target of receiver {self.rid} ({rule}): {e}") from None  # its remedy last

    def current(self) -> list[torch.Tensor]:
        raise NotImplementedError

    def apply(self, views: list[torch.Tensor], mapped: Mapped) -> None:
        raise NotImplementedError

    def detach(self) -> None:
        """Stop depending on the slots before the channel closes (LIFE-5); only zero-copy does."""


class CopyToTarget(Strategy):
    def __init__(self, rid, checker, target, stream):
        super().__init__(rid, checker, target)
        self.stream = stream
        self.targets("INIT-3")  # raises WeightsMismatchError naming what differs

    def current(self):
        return self.targets()

    def apply(self, views, mapped):
        _copy(self.targets(), views, mapped, self.stream, self.fence)


class CopyToOwn(Strategy):
    """No target: tensors of its own, views of one buffer shaped like a CPU slot when it can."""

    def __init__(self, rid, checker, init: Init, slot: torch.Tensor, stream):
        super().__init__(rid, checker, None)
        self.stream = stream
        self._bytes = None
        if slot.device.type == "cpu" and all(e.device == "cpu" for e in init.manifest):
            # As long as the arrays, not the Init's slot: a later slot may be of any size that holds them (LAYOUT-1).
            self._end = layout.arrays_end(init.manifest)
            self._bytes = torch.empty(self._end, dtype=slot.dtype)
            self._own = layout.views(self._bytes, init.manifest)
        else:
            self._own = [torch.empty(e.shape, dtype=layout.dtype_of(e.dtype), device=e.device) for e in init.manifest]

    def current(self):
        return self._own

    def apply(self, views, mapped):
        if self._bytes is not None:
            self._bytes.copy_(mapped.tensor[: self._end])
        else:
            _copy(self._own, views, mapped, self.stream, self.fence)


class ZeroCopy(Strategy):
    """The weights are the slot's own bytes, read-only; a module target is rebound to them (ZC-1)."""

    def __init__(self, rid: int, checker: layout.Checker, target: layout.Weights | None):
        super().__init__(rid, checker, target)
        self._views: list[torch.Tensor] = []
        if target is not None:
            self.targets("INIT-3")

    def current(self):
        return self.targets() if self.target is not None else self._views

    def apply(self, views, mapped):
        mapped.ready()  # the host waits for the sender's write of this slot (CUDA-2)
        self.fence.wait()  # and for the readers' kernels on the views given up: the ack frees their slot (CUDA-3)
        if self.target is not None:
            for dst, view in zip(self.targets(), views):
                dst.data = view
                if dst.requires_grad:  # the slot's bytes are not trainable: outside autograd (ZC-3)
                    dst.requires_grad_(False)
        self._views = views

    def detach(self):
        """Copies of the held version, so the sender may reuse its slot once we are gone (LIFE-5).

        A target tensor the caller pointed elsewhere is left alone: what it holds is the caller's.
        """
        self.fence.wait()  # the readers' kernels on the views end before the mapping goes (CUDA-3)
        own = [v.clone() for v in self._views]
        for device in {v.device for v in own if v.is_cuda}:
            torch.cuda.current_stream(device).synchronize()  # and so do the copies
        if self.target is not None:
            with torch.no_grad():
                flat = layout.flatten(self.target, detach=False)
                for name, view, copy in zip(self.checker.names, self._views, own):
                    dst = flat.get(name)
                    if dst is not None and dst.data_ptr() == view.data_ptr():
                        dst.data = copy
        self._views = own


class CopyToPacked(Strategy):
    """A packed target laid out like the slot: an apply is one copy of the whole buffer (API-8)."""

    def __init__(self, rid, checker, target):
        super().__init__(rid, checker, target)
        self.targets("INIT-3")
        self._end = layout.arrays_end(target.manifest)  # the bytes of every array: later slots may be larger (LAYOUT-1)

    def current(self):
        return self.targets()

    def targets(self, rule: str = "ACK-7") -> list[torch.Tensor]:
        try:
            self.target.check()
        except WeightsMismatchError as e:
            raise WeightsMismatchError(f"the target of receiver {self.rid} ({rule}): {e}") from None  # its remedy last
        return super().targets(rule)

    def apply(self, views, mapped):
        self.target.check()  # ACK-7: a tensor that left the buffer is a mismatch; nothing is written
        self.target.buffer[: self._end].copy_(mapped.tensor[: self._end])


def _copy(dst: list[torch.Tensor], src: list[torch.Tensor], mapped: Mapped, stream, fence: ReadFence) -> None:
    if stream is None:
        with torch.no_grad():
            torch._foreach_copy_(dst, src)
        return
    with torch.no_grad(), torch.cuda.stream(stream):
        mapped.ready(stream)
        fence.order(stream)  # the readers' kernels still read `dst` (CUDA-3)
        torch._foreach_copy_(dst, src, non_blocking=True)
    stream.synchronize()  # the read ends before the ack frees the slot (CUDA-3)


def make(rid: int, init: Init, target, zero_copy: bool, mapped: dict[int, Mapped]) -> Strategy:
    """The strategy for this receiver's options and the Init's layout; checks the target (INIT-3)."""
    checker = layout.Checker(init.manifest, target=True)
    device = torch.device(init.manifest[0].device) if init.manifest else torch.device("cpu")
    stream = torch.cuda.Stream(device) if device.type == "cuda" else None
    strategy = _make(rid, init, target, zero_copy, mapped, checker, stream)
    strategy.fence = ReadFence(device)
    strategy.fence.record()  # the caller's own work on the target comes before the first apply
    return strategy


def _make(rid, init, target, zero_copy, mapped, checker, stream) -> Strategy:
    if zero_copy:
        return ZeroCopy(rid, checker, target)
    slot = mapped[init.slot].tensor
    assert slot is not None, "the Init's slot was mapped just now"
    if (isinstance(target, Packed) and target.manifest == init.manifest and target.buffer.device.type == "cpu"
            and target.buffer.numel() == slot.numel()):
        return CopyToPacked(rid, checker, target)
    if target is None:
        return CopyToOwn(rid, checker, init, slot, stream)
    return CopyToTarget(rid, checker, target, stream)
