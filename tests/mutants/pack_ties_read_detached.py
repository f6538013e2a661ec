"""Mutant: `pack()` looks for tied tensors among a module's state_dict read detached, where every entry is a new
tensor object, so a module that ties a parameter under two names (an embedding shared with the output layer) is not
refused: the parameter is moved twice and the first send raises that it "no longer views the packed buffer".
Violates API-8 (tied tensors are refused with ValueError before anything moves). From a thirteenth outside round.

Seam: packing.pack (its body, with the tie check on the detached entries).
"""
import torch

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout, packing, wire  # noqa: F401

VIOLATES = ("API-8",)
KILLED_BY = ("conformance/test_pack.py::test_tied_tensors_are_refused_and_nothing_moves[module]",)


def pack(weights):
    detached = layout.flatten(weights)  # what a sender reads
    if len({id(t) for t in detached.values()}) != len(detached):  # BUG: detached entries are never one object
        raise ValueError("tied tensors (one tensor under two names) cannot be packed: untie them, or send unpacked")
    flat = layout.flatten(weights, detach=False)
    manifest = layout.make_manifest(detached if isinstance(weights, torch.nn.Module) else flat)
    wire.check_init_fits(manifest)
    devices = {e.device for e in manifest}
    if len(devices) > 1:
        raise NotImplementedError(f"weights on several devices {sorted(devices)}; move them to one device first")
    device = torch.device(devices.pop()) if devices else torch.device("cpu")
    buffer = torch.zeros(layout.slot_nbytes(manifest, str(device)), dtype=torch.uint8, device=device)
    tensors = list(flat.values())
    with torch.no_grad():
        for t, view in zip(tensors, layout.views(buffer, manifest)):
            view.copy_(t.detach())
            t.data = view
    return packing.Packed(weights, list(flat), tensors, buffer, manifest)


packing.pack = pack
weightsync.pack = pack
