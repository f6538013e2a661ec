"""Naming weights, checking them against the manifest, packing them into a slot.

Every tensor of one version sits in one flat byte buffer per device, each at an
offset aligned to ALIGN bytes (LAYOUT-1), so a whole model costs one shared
allocation and an update is one batched copy (LAYOUT-2).
"""

from __future__ import annotations

import dataclasses
import math
import operator
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeAlias, TypeGuard

import torch
from torch import nn

from . import limits
from .errors import FIX, WeightsMismatchError
from .messages import Entry


class _PackedLike(Protocol):
    """What this module reads of packing.Packed (which imports this module): its names, tensors and copies."""

    names: list[str]
    tensors: list[torch.Tensor]

    def detached(self) -> dict[str, torch.Tensor]: ...


#: What a sender publishes and a receiver writes into (API-1): an nn.Module, a TensorDict or a
#: mapping of names to tensors (packed weights are one).
Weights: TypeAlias = nn.Module | Mapping[str, torch.Tensor]

ALIGN = 64
_MAX_LISTED = 8
_CHUNK_CAT = getattr(torch, "_chunk_cat", None)  # private, so optional: one gather per run
# A gather costs one launch where _foreach_copy_ costs a little per array, but it copies large arrays
# slower. tests/gpu/gather_sizes.py on an H100, gather / per-array copies: 512 arrays of 32 KiB 0.67,
# 3,000 of 32 KiB 0.60, 64 of any size 1.2-1.7, 3,000 of 128 KiB 1.9, 512 of 2 MiB 7.7; on one CPU
# core 0.9-1.1 everywhere. So a run is gathered only when it is long and its arrays small on average.
_GATHER_BELOW = 96 << 10
_GATHER_FROM = 256


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


#: The dtypes the wire defines (WIRE-8, Table 12-2), by their names on the wire.
WIRE_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "bfloat16", "float32", "float64", "complex64", "complex128")


def dtype_of(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None) if name in WIRE_DTYPES else None
    if not isinstance(dtype, torch.dtype):
        raise WeightsMismatchError(f"unknown dtype {name!r:.40} in manifest: Table 12-2 defines {', '.join(WIRE_DTYPES)}")
    return dtype


def check_carriable(name: str, t: torch.Tensor) -> None:
    """Refuses, naming the entry, a weight the wire cannot carry (SEC-7): checked when the sender or
    pack() is built, so that nothing fails later on the wire or in a receiver. A name that is not a
    str never gets here: flatten() refuses it (BAD-1)."""
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"weight name {name!r:.80} is not valid Unicode text (it holds a lone surrogate): "
                         "the wire carries names as UTF-8 (SEC-7, WIRE-3)") from None
    if size > limits.MAX_TEXT:
        raise ValueError(f"weight name {name[:40]!r}... is {size} bytes of UTF-8; the wire carries at most "
                         f"{limits.MAX_TEXT} (SEC-7, WIRE-3)")
    if dtype_name(t.dtype) not in WIRE_DTYPES:
        raise ValueError(f"weight {name!r:.80} has dtype {dtype_name(t.dtype)}, which the wire does not define "
                         f"(SEC-7; WIRE-8's Table 12-2: {', '.join(WIRE_DTYPES)})")
    if t.dim() > limits.MAX_DIMS:
        raise ValueError(f"weight {name!r:.80} has {t.dim()} dimensions; the wire carries at most "
                         f"{limits.MAX_DIMS} (SEC-7, WIRE-3)")


def _tensordict_base() -> Any:
    """TensorDictBase once the caller has imported tensordict, else (): no TensorDict can exist before.

    Never imported here: the import costs more than torch's own (seconds on a loaded
    machine), and a worker that uses no TensorDict should not pay it at start-up."""
    td = sys.modules.get("tensordict")
    return getattr(td, "TensorDictBase", ()) if td is not None else ()


def flatten(weights: object, *, detach: bool = True) -> dict[str, torch.Tensor]:
    """Name -> tensor for an nn.Module (its state_dict), a TensorDict or a mapping.

    A sender reads module parameters detached: a module is the natural way to
    pass weights that require grad, while a mapping value that requires grad is
    rejected (BAD-3). A receiver keeps the parameter objects (`detach=False`)
    so that it can write into them or rebind them.
    """
    if isinstance(weights, nn.Module):
        sd = weights.state_dict(keep_vars=True)
        return {k: v.detach() for k, v in sd.items()} if detach else dict(sd)
    if isinstance(weights, _tensordict_base()):
        flat: dict[str, torch.Tensor] = {}
        for key, value in weights.items(include_nested=True, leaves_only=True):
            name = ".".join(key) if isinstance(key, tuple) else key
            if name in flat:
                raise WeightsMismatchError(f"duplicate name {name!r} after flattening nested keys (BAD-1)")
            flat[name] = value
        return flat
    if _is_packed(weights):
        return weights.detached() if detach else dict(zip(weights.names, weights.tensors))
    if isinstance(weights, Mapping):
        flat = {}
        for name, value in weights.items():
            if not isinstance(name, str):
                raise WeightsMismatchError(f"weight names must be str, got {name!r} (BAD-1)")
            if not isinstance(value, torch.Tensor):
                raise WeightsMismatchError(f"{name!r} is a {type(value).__name__}, not a tensor (BAD-2)")
            flat[name] = value
        return flat
    raise TypeError(
        f"weights must be an nn.Module, a TensorDict or a Mapping[str, Tensor], not {type(weights).__name__}"
    )


def _is_packed(weights: object) -> TypeGuard[_PackedLike]:
    """Packed weights (packing.Packed, which imports this module), told apart without importing it."""
    return hasattr(weights, "detached") and hasattr(weights, "buffer")


#: Up to this many tensors the checker reads each tensor in one loop; above it, in one pass per property.
_FEW = 32
_DTYPE = operator.attrgetter("dtype")
_REQUIRES_GRAD = operator.attrgetter("requires_grad")
_IS_META = operator.attrgetter("is_meta")


def _c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The strides torch gives a contiguous tensor of `shape` (a size below 1 counts as 1)."""
    out, step = [], 1
    for size in reversed(shape):
        out.append(step)
        step *= max(size, 1)
    return tuple(reversed(out))


def _check_tensor(name: str, t: torch.Tensor) -> None:
    if t.layout != torch.strided:
        raise WeightsMismatchError(f"{name!r} has layout {t.layout}; only dense tensors can be synced (BAD-2)")
    if t.requires_grad:
        raise WeightsMismatchError(
            f"{name!r} requires grad; pass tensor.detach() or the nn.Module itself (BAD-3)"
        )


def make_manifest(flat: Mapping[str, torch.Tensor]) -> tuple[Entry, ...]:
    """The manifest of `flat`, in its order, with aligned offsets per device."""
    entries = []
    ends: dict[str, int] = {}
    for name, t in flat.items():
        check_carriable(name, t)
        _check_tensor(name, t)
        device = str(t.device)
        nbytes = t.numel() * t.element_size()
        offset = ends.get(device, 0)
        entries.append(Entry(name, dtype_name(t.dtype), tuple(t.shape), device, offset, nbytes))
        ends[device] = offset + -(-nbytes // ALIGN) * ALIGN
    return tuple(entries)


#: The floating dtypes a slot may be cast to (LAYOUT-3), those of Table 12-2.
CAST_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def cast_manifest(manifest: Sequence[Entry], dtype: torch.dtype) -> tuple[Entry, ...]:
    """The manifest of slots holding every floating entry as `dtype`, laid out afresh (LAYOUT-1, LAYOUT-3)."""
    flat = {e.name: torch.empty(e.shape, dtype=dtype if dtype_of(e.dtype).is_floating_point else dtype_of(e.dtype),
                                device="meta") for e in manifest}
    devices = [e.device for e in manifest]
    return tuple(dataclasses.replace(e, device=d) for e, d in zip(make_manifest(flat), devices))


def arrays_end(manifest: Sequence[Entry], device: str | None = None) -> int:
    """Where the last array (on `device`, or on any) ends: what every slot that holds them has in common."""
    return max((e.offset + e.nbytes for e in manifest if device is None or e.device == device), default=0)


def slot_nbytes(manifest: Sequence[Entry], device: str) -> int:
    """Bytes of one slot on `device`, at least ALIGN so that a buffer always exists."""
    return max(ALIGN, -(-arrays_end(manifest, device) // ALIGN) * ALIGN)


#: The remedies of weights that do not match the manifest: a sender's, a receiver's target (issue 39).
SEND_FIX = "send weights with the names, dtypes, shapes and devices of those the Sender was built from"
TARGET_FIX = "make the Receiver's target match the trainer's names, dtypes, shapes and devices (or give it target=None)"
CAST_FIX = ("build the trainer's Sender with dtypes={} (or a list, one per worker): it casts this worker's slots "
            "(LAYOUT-3)")


class Checker:
    """Checks weights against a manifest before any shared byte changes (BAD-1, BAD-2, BAD-3).

    `target`: it checks a receiver's target, whose remedy differs from a sender's weights': a
    target that differs only in its floating-point dtype is fixed by the Sender's `dtypes=`.
    """

    def __init__(self, manifest: Sequence[Entry], *, target: bool = False):
        self.target = target
        self.manifest = tuple(manifest)
        self.names = [e.name for e in manifest]
        self._expect = [(dtype_of(e.dtype), torch.Size(e.shape), torch.device(e.device)) for e in manifest]
        self._dtypes = [dtype for dtype, _, _ in self._expect]
        self._device_ids = [-1 if device.type == "cpu" else device.index for _, _, device in self._expect]
        self._numels = [math.prod(shape) for _, shape, _ in self._expect]
        self._strides = [_c_strides(shape) for _, shape, _ in self._expect]
        # Strides leave a size-0 or size-1 dimension's place open: (2, 0) and (1, 0), or (6, 1) and a
        # transposed (1, 6), can share them. Those few entries have their shapes read at every send.
        self._loose = [i for i, (_, shape, _) in enumerate(self._expect) if any(n <= 1 for n in shape)]
        # _each's rows, for a few tensors: (dtype, device index, element count, strides, shape, shape read?)
        self._rows = [(dtype, i, n, strides, shape, k in self._loose) for k, ((dtype, shape, _), i, n, strides)
                      in enumerate(zip(self._expect, self._device_ids, self._numels, self._strides))]
        self._full_next = False

    def ordered(self, flat: Mapping[str, torch.Tensor], *, allow_grad: bool = False) -> list[torch.Tensor]:
        """The tensors of `flat` in manifest order, or WeightsMismatchError listing every problem.

        This runs on every send, and a training step changes every tensor, so the common
        case reads only what torch returns cheaply: dtype, device index, element count,
        requires_grad and strides, one tensor after another for a few tensors (`_each`),
        else in one pass over the tensors per property (`_bulk`). A tensor with its entry's
        element count and the strides of the entry's shape in C order has that shape when
        no dimension of it is 0 or 1; entries with such a dimension, and tensors with other
        strides (a transposed view, say), have their shapes read one by one. Anything
        found wrong is checked in full and named.
        """
        if not self._full_next:
            try:
                out = self._each(flat, allow_grad) if len(self._rows) <= _FEW else self._bulk(flat, allow_grad)
                if out is not None:
                    return out
            except (KeyError, AttributeError, TypeError, RuntimeError):  # RuntimeError: a layout without strides
                pass
        self._full_next = False
        self._explain(flat, allow_grad)  # shape by shape: raises naming every problem, or finds none
        return [flat[n] for n in self.names]

    def _bulk(self, flat: Mapping[str, torch.Tensor], allow_grad: bool) -> list[torch.Tensor] | None:
        out = list(map(flat.__getitem__, self.names))
        if not (len(flat) == len(out)
                and list(map(_DTYPE, out)) == self._dtypes
                and list(map(torch.Tensor.get_device, out)) == self._device_ids
                and list(map(torch.Tensor.numel, out)) == self._numels
                and (allow_grad or not any(map(_REQUIRES_GRAD, out)))
                # A meta tensor's device index is a CPU tensor's (-1), and a copy into one writes nothing without
                # an error: a target's are looked at (a sender's cannot be read from, so its copy fails loudly).
                and not (self.target and any(map(_IS_META, out)))):
            return None
        expect = self._expect
        strides = list(map(torch.Tensor.stride, out))
        if strides != self._strides:
            odd = [i for i, (got, want) in enumerate(zip(strides, self._strides)) if got != want]
            # A sparse tensor answers stride() too (zeros, in torch 2.13): other strides may mean another layout.
            if not all(out[i].shape == expect[i][1] and out[i].layout == torch.strided for i in odd):
                return None
        return out if all(out[i].shape == expect[i][1] for i in self._loose) else None

    def _each(self, flat: Mapping[str, torch.Tensor], allow_grad: bool) -> list[torch.Tensor] | None:
        """What `_bulk` checks, one tensor at a time: quicker than its passes for a few tensors (a small policy)."""
        out, meta = list(map(flat.__getitem__, self.names)), self.target
        for t, (dtype, device, numel, strides, shape, loose) in zip(out, self._rows):
            if (t.dtype != dtype or t.get_device() != device or t.numel() != numel or (meta and t.is_meta)
                    or (t.requires_grad and not allow_grad) or (loose and t.shape != shape)
                    or (t.stride() != strides and not (t.shape == shape and t.layout == torch.strided))):
                return None
        return out if len(flat) == len(out) else None

    def forget(self) -> None:
        """Check everything, shape by shape, at the next call (a copy failed on a tensor the bulk pass let through)."""
        self._full_next = True

    def _explain(self, flat: Mapping[str, torch.Tensor], allow_grad: bool) -> None:
        problems: list[str] = []
        fix = TARGET_FIX if self.target else SEND_FIX
        if len(flat) != len(self.names) or any(n not in flat for n in self.names):
            missing = [n for n in self.names if n not in flat]
            unknown = [n for n in flat if n not in set(self.names)]
            if missing:
                problems.append(f"missing {missing[:_MAX_LISTED]}")
            if unknown:
                problems.append(f"unknown {unknown[:_MAX_LISTED]}")
            raise WeightsMismatchError("names differ from the manifest: " + "; ".join(problems) + f" (BAD-1). {FIX}{fix}")
        casts: set[torch.dtype] = set()  # a target's dtypes where only a floating dtype differs
        other = False  # a problem that dtypes= does not fix
        for name, (dtype, shape, device) in zip(self.names, self._expect):
            t = flat[name]
            if not isinstance(t, torch.Tensor):
                other = True
                problems.append(f"{name!r} is a {type(t).__name__}, not a tensor")
            elif t.dtype != dtype or t.shape != shape or t.device != device:
                if t.dtype in CAST_DTYPES and dtype in CAST_DTYPES and t.shape == shape and t.device == device:
                    casts.add(t.dtype)
                else:
                    other = True
                problems.append(
                    f"{name!r} is {dtype_name(t.dtype)}{list(t.shape)} on {t.device}, "
                    f"expected {dtype_name(dtype)}{list(shape)} on {device}"
                )
            elif t.layout != torch.strided or (t.requires_grad and not allow_grad):
                other = True
                try:
                    _check_tensor(name, t)
                except WeightsMismatchError as e:
                    problems.append(str(e))
            if len(problems) >= _MAX_LISTED:
                break
        if problems:
            if self.target and len(casts) == 1 and not other:
                fix = CAST_FIX.format(f"torch.{dtype_name(casts.pop())}")
            raise WeightsMismatchError("weights do not match the manifest: " + "; ".join(problems) + f" (BAD-2). {FIX}{fix}")


def views(buffer: torch.Tensor, manifest: Sequence[Entry]) -> list[torch.Tensor]:
    """Typed views into a slot's byte buffer, one per manifest entry."""
    out = []
    for e in manifest:
        raw = buffer[e.offset : e.offset + e.nbytes]
        out.append(raw.view(dtype_of(e.dtype)).view(e.shape))
    return out


class Packer:
    """Copies a version's tensors into one slot buffer with as few torch calls as it can.

    A per-tensor copy costs about a microsecond of dispatch, which dominates a model
    of many small tensors. Arrays of one dtype that sit back to back in the buffer
    (each but the last a multiple of ALIGN bytes, as most weight matrices are), at least
    _GATHER_FROM of them averaging under _GATHER_BELOW bytes (the experts of a mixture),
    form a run that one `torch._chunk_cat` gathers; the rest go through one
    `torch._foreach_copy_` (LAYOUT-2), which is faster for few or large arrays.

    A gather reads and writes on one device, so runs form only when the weights (`source`,
    by default the buffer's device) live where the buffer does: CUDA weights bound for a
    CPU slot are copied array by array.
    """

    def __init__(self, buffer: torch.Tensor, manifest: Sequence[Entry], source: torch.device | str | None = None,
                 cast: bool = False):
        self.views = views(buffer, manifest)
        self.runs: list[tuple[int, int, torch.Tensor]] = []
        rest: list[int] = []
        # A gather copies bytes; a cast (LAYOUT-3) converts each array, which _foreach_copy_ does.
        gather = _CHUNK_CAT is not None and not cast and gathers(buffer.device, torch.device(source or buffer.device))
        i = 0
        while i < len(manifest):
            j = i + 1
            while gather and j < len(manifest) and _adjacent(manifest[j - 1], manifest[j]):
                j += 1
            if j - i >= _GATHER_FROM and manifest[j - 1].offset + manifest[j - 1].nbytes - manifest[i].offset < _GATHER_BELOW * (j - i):
                first, last = manifest[i], manifest[j - 1]
                raw = buffer[first.offset : last.offset + last.nbytes]
                self.runs.append((i, j, raw.view(dtype_of(first.dtype)).view(1, -1)))
            else:
                rest.extend(range(i, j))  # every array of a run left ungathered is copied on its own
            i = j
        self._rest: list[int] | None = None if rest == list(range(len(manifest))) else rest  # None: every array
        self._rest_views = [self.views[k] for k in rest]

    def write(self, tensors: list[torch.Tensor]) -> None:
        """Copies `tensors` (checked against the manifest, on the buffer's device) into place.

        No grad mode to switch off: the checker let through no tensor that requires grad (BAD-3).
        """
        cat = _CHUNK_CAT
        if cat is not None:  # else there are no runs
            for start, stop, out in self.runs:
                cat(tensors[start:stop], 0, 1, out=out)
        if self._rest_views:
            torch._foreach_copy_(self._rest_views, tensors if self._rest is None else [tensors[k] for k in self._rest])


def gathers(buffer: torch.device, source: torch.device) -> bool:
    """Whether the packer may gather runs: `_chunk_cat` takes its inputs and output on one device
    (the CPU, or one GPU: 3,042 bf16 arrays in 0.84 ms against 1.65 ms copied one by one on an H200).
    Slot and source devices come with their index (the sender names every GPU by it)."""
    return buffer.type in ("cpu", "cuda") and buffer == source


def _adjacent(a: Entry, b: Entry) -> bool:
    """Whether `b` can join the run that ends with `a`: same dtype, no gap, no 0-d or empty array."""
    return (
        a.dtype == b.dtype
        and a.device == b.device
        and a.offset + a.nbytes == b.offset
        and a.nbytes > 0 and b.nbytes > 0
        and len(a.shape) > 0 and len(b.shape) > 0
    )
