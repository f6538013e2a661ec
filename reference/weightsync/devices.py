"""Which device a receiver's manifest names: the sender's word, re-pointed where this process holds the weights.

The sender writes its own device into each manifest entry, but a target is checked
against the manifest as this process sees it. Two things can differ: a GPU slot is
mapped on this process's index of that GPU (CUDA-1, CUDA-7), and a network Init names
the host memory it travels in while a copying receiver's target may sit on a GPU
(NET-7). Each caller decides the device; `with_device` rewrites the Init once for both.
"""

from __future__ import annotations

import dataclasses

from . import layout
from .messages import Init
from .slots import Mapped


def with_device(init: Init, device: str) -> Init:
    """`init` with every manifest entry on `device`; `init` itself when they all are already."""
    if all(e.device == device for e in init.manifest):
        return init
    return dataclasses.replace(init, manifest=tuple(dataclasses.replace(e, device=device) for e in init.manifest))


def mapped_device(slot: Mapped) -> str | None:
    """The GPU this process mapped `slot` on, or None for a slot in host memory (CUDA-1).

    The sender names its own index; under another CUDA_VISIBLE_DEVICES the same GPU
    has another index here, and a target is checked against this one.
    """
    device = slot.tensor.device if slot.tensor is not None else None
    if device is None or device.type != "cuda":
        return None
    return str(device)


def target_device(target: layout.Weights | None, zero_copy: bool) -> str | None:
    """The one device of a copying receiver's target, or None to leave a network Init as it came (NET-7).

    The network carries host memory, so the manifest names the CPU; a target on one GPU
    is checked against the rest of the manifest and each apply copies into it. A target
    on several devices, or one whose tensors cannot be read, is left to the check, which
    names what differs; a zero-copy receiver's target must be on the CPU.
    """
    if target is None or zero_copy:
        return None
    try:
        devices = {t.device for t in layout.flatten(target, detach=False).values()}
    except Exception:  # noqa: BLE001 - not weights: the strategy's check says so (INIT-3)
        return None
    if len(devices) != 1 or next(iter(devices)).type not in ("cpu", "cuda"):
        return None
    return str(next(iter(devices)))
