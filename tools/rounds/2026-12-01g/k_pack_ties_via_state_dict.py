"""Bug: `pack()` looks for tied tensors among the tensors of the weights as a sender reads them, a module's
`state_dict()` *detached*; every detached entry is a new tensor object, so a module whose parameter is tied under
two names (an embedding shared with the output layer, the common weight tying of language models and of many
policies) is not refused. The tied parameter is then moved twice and ends at its second name's place, so its first
name's place no longer holds it: the trainer's first send raises WeightsMismatchError saying that `emb.weight` "no
longer views the packed buffer ... pack the weights again", and packing again gives the same Packed and the same
error, so the trainer that was told to use `pack()` for speed cannot send at all (and were the check skipped, the
first name would carry the values it had at packing). A careful implementer could have written
it from API-1's "A module contributes its state_dict() (parameters and buffers, read detached)": the manifest is
built from that detached dict, and checking ties on the very dict the layout comes from looked like the natural
place; ties in a plain mapping (one tensor object twice) are still refused. Breaks API-8 ("Tied tensors (one tensor
under two names) are refused with ValueError ... before anything moves"; "A send MUST deliver exactly what it would
deliver for the unpacked weights").
"""
import torch

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout, packing, wire  # noqa: F401

VIOLATES = ("API-8",)


def pack(weights):
    detached = layout.flatten(weights)  # what a sender reads: a module's state_dict, detached
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
