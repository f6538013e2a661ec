"""The sender's arguments, checked: receiver ids, lists of workers, and each receiver's slot device and dtype.

Apart from sender.py so that the constructor and the calls read as what they do; every
check here raises ValueError naming the requirement, before anything is changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias

import torch

from . import layout
from .messages import Entry
from .profiles import UNIX, Profile

#: A slot device as `devices` may name it: "cuda:1", torch.device("cpu"), or a CUDA index (CUDA-1).
DeviceLike: TypeAlias = str | int | torch.device


def check_id(i: int, n: int) -> int:
    """`i` if it is a receiver id of a sender with `n` receivers (SEND-6)."""
    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
        raise ValueError(f"receiver id must be an int in [0, {n}), got {i!r} (SEND-6)")
    return i


def check_workers(workers: Iterable[int], n: int) -> list[int]:
    """The ids `workers` names: at least one, each once (SEND-6)."""
    if isinstance(workers, (str, bytes)) or not hasattr(workers, "__iter__"):
        raise ValueError(f"workers must be a list of receiver ids, got {workers!r} (SEND-6)")
    ids = [check_id(i, n) for i in workers]
    if not ids:
        raise ValueError("workers must name at least one receiver (SEND-6)")
    if len(set(ids)) != len(ids):
        raise ValueError(f"workers lists a receiver twice: {ids} (SEND-6)")
    return ids


def per_receiver(option: Sequence[Any] | Callable[[int], Any], n: int, name: str) -> list[Any]:
    """An option given per receiver: a sequence of one value each, or a function of the id."""
    if callable(option):
        return [option(i) for i in range(n)]
    values = list(option)
    if len(values) != n:
        raise ValueError(f"{name} names {len(values)} values for {n} receivers")
    return values


def slot_dtypes(dtypes: torch.dtype | Sequence[torch.dtype | None] | Callable[[int], torch.dtype | None] | None,
                 n: int, manifest: tuple[Entry, ...]) -> list[torch.dtype | None]:
    """The floating dtype of each receiver's slots when it is not the weights': None otherwise (LAYOUT-3)."""
    if dtypes is None:
        return [None] * n
    wanted: list[torch.dtype | None] = ([dtypes] * n if isinstance(dtypes, torch.dtype)
                                        else per_receiver(dtypes, n, "dtypes (LAYOUT-3)"))
    floating = {layout.dtype_of(e.dtype) for e in manifest if layout.dtype_of(e.dtype).is_floating_point}
    out: list[torch.dtype | None] = []
    for i, d in enumerate(wanted):
        if d is not None and d not in layout.CAST_DTYPES:
            raise ValueError(f"dtypes[{i}] is {d!r}: slots may be cast only to one of "
                             f"{[str(t) for t in layout.CAST_DTYPES]} (LAYOUT-3)")
        out.append(None if d is None or floating <= {d} else d)  # nothing to convert: the weights' own slots
    return out


def slot_devices(devices: Sequence[DeviceLike] | Callable[[int], DeviceLike] | None, n: int,
                  source: torch.device, profile: Profile = UNIX) -> list[torch.device]:
    """The slot device of each receiver: `devices[i]`, `devices(i)`, or `source`, each one that `profile` allows
    (CUDA-1; a sender that listens on TCP, the CPU, NET-7)."""
    wanted: list[DeviceLike] = [source] * n if devices is None else per_receiver(devices, n, "devices")
    out = []
    for d in map(torch.device, wanted):
        profile.check_slot_device(str(d))
        if d.type == "cuda":
            if not torch.cuda.is_available():
                raise ValueError(f"slot device {d} requested, but CUDA is not available here")
            d = torch.device("cuda", torch.cuda.current_device() if d.index is None else d.index)
        elif d.type != "cpu":
            raise ValueError(f"slot device {d} is neither cpu nor cuda")
        out.append(d)
    return out
