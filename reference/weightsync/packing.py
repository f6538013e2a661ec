"""Weights that live in one buffer laid out like a slot, so that a send copies one buffer (API-8).

`pack(module)` moves every parameter and buffer of a module (or every tensor of a
mapping) into views of one flat buffer with the slot's layout (LAYOUT-1). Their
Python objects stay the same, so optimizers and hooks keep working, and in-place
updates write into the buffer. A send of packed weights then costs one copy,
however many tensors there are, instead of a check and a copy per tensor.

What could break the arrangement is a tensor that stops viewing the buffer: its
`.data` replaced, or it was resized. Replacing `.data` drops a reference to the
buffer's storage, so each send compares that count (constant time) and looks at
every tensor only when it changed; only a tensor that does not require grad can be
resized in place, so the total size of those (a module's buffers; every tensor of
a mapping without grad) is compared on every send, about 60 ns a tensor. A tensor that left the buffer makes the send raise WeightsMismatchError
before any byte is written (BAD-2, BAD-4). What this misses is written in spec 10.6.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import torch

from . import layout, wire
from .errors import WeightsMismatchError
from .messages import Entry

_USE_COUNT = getattr(torch._C, "_storage_Use_Count", None)  # private: without it every send checks each tensor


class Packed(Mapping[str, torch.Tensor]):
    """The packed weights: name -> tensor (the caller's own objects), and the buffer they view."""

    def __init__(self, source: layout.Weights, names: list[str], tensors: list[torch.Tensor], buffer: torch.Tensor,
                 manifest: tuple[Entry, ...]):
        self.source = source
        self.names = names
        self.tensors = tensors
        self.buffer = buffer
        self.manifest = manifest
        self._storage = buffer.untyped_storage()
        self._ptr = buffer.data_ptr()
        self._expected = [v.data_ptr() for v in layout.views(buffer, manifest)]
        self._count = self._use_count()
        self._loose = self._resizable()

    def _resizable(self) -> tuple[list[torch.Tensor], int]:
        """The tensors that resize_() can change (it refuses tensors that require grad), and their total size."""
        loose = [t for t in self.tensors if not t.requires_grad]
        return loose, sum(map(torch.Tensor.numel, loose))

    def _use_count(self) -> int | None:
        return _USE_COUNT(self._storage._cdata) if _USE_COUNT is not None else None

    def check(self) -> None:
        """Raises WeightsMismatchError when a tensor no longer views the buffer where the manifest says (API-8)."""
        count = self._use_count()
        if (count is not None and count == self._count and self.buffer.data_ptr() == self._ptr
                and sum(map(torch.Tensor.numel, self._loose[0])) == self._loose[1]):
            return  # nothing was detached, resized or re-homed since the last full look
        for name, t, e, ptr in zip(self.names, self.tensors, self.manifest, self._expected):
            if (t.data_ptr() != ptr or t.dtype != layout.dtype_of(e.dtype) or tuple(t.shape) != e.shape
                    or (t.numel() > 1 and not t.is_contiguous())):
                raise WeightsMismatchError(
                    f"{name!r} no longer views the packed buffer (its .data was replaced or it was resized); "
                    "pack the weights again (API-8, BAD-2)"
                )
        self._count = count  # more views of the buffer than at packing, none lost: fine
        self._loose = self._resizable()

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[self.names.index(name)]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def detached(self) -> dict[str, torch.Tensor]:
        return {n: t.detach() for n, t in zip(self.names, self.tensors)}

    def __repr__(self) -> str:
        return f"Packed({len(self.names)} tensors, {self.buffer.numel()} bytes on {self.buffer.device})"


def pack(weights: layout.Weights) -> Packed:
    """Re-homes the tensors of `weights` into one buffer laid out like a slot (API-8).

    The tensors keep their values and their Python identity (optimizers and hooks keep working); pass the
    result to `Sender` (as its weights, or to a send) or to `Receiver` as its target.

    Args:
        weights: what a `Sender` accepts: an `nn.Module`, a TensorDict or a mapping of names to tensors.

    Returns:
        Packed: the same weights, now views of one buffer; sends of it copy that buffer in one copy.

    Raises:
        ValueError: tied tensors (one tensor under two names), or weights the wire cannot carry (SEC-7).
        NotImplementedError: tensors on several devices.
    """
    flat = layout.flatten(weights, detach=False)
    if len({id(t) for t in flat.values()}) != len(flat):
        raise ValueError("tied tensors (one tensor under two names) cannot be packed: untie them, or send unpacked")
    detached = {k: v.detach() for k, v in flat.items()}
    manifest = layout.make_manifest(detached if isinstance(weights, torch.nn.Module) else flat)
    wire.check_init_fits(manifest)  # SEC-7: what a sender of these weights would refuse, pack() refuses now
    devices = {e.device for e in manifest}
    if len(devices) > 1:
        raise NotImplementedError(f"weights on several devices {sorted(devices)}; move them to one device first")
    device = torch.device(devices.pop()) if devices else torch.device("cpu")
    buffer = torch.zeros(layout.slot_nbytes(manifest, str(device)), dtype=torch.uint8, device=device)
    tensors = list(flat.values())
    with torch.no_grad():
        for t, view in zip(tensors, layout.views(buffer, manifest)):
            view.copy_(t.detach())
            t.data = view  # same object, new home: optimizers and hooks keep working
    return Packed(weights, list(flat), tensors, buffer, manifest)
