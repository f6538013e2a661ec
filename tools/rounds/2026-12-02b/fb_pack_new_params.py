"""Bug: `pack(module)` re-homes each parameter by registering a new `nn.Parameter` over its view of the buffer
(`setattr(submodule, name, nn.Parameter(view))`) instead of pointing the existing object at it (`p.data = view`),
which PyTorch discourages. The module then holds parameters that view the buffer, and `packed[name] is
module...weight` still holds, but an optimizer built before `pack()` (the usual order: model, optimizer, then the
weightsync setup) keeps the old parameter objects, which no forward pass uses any more: their grads stay None, every
`optim.step()` changes nothing, and the model the trainer runs and every version it sends stay the weights of
packing time, silently (no error, the versions advance, the workers ack; only a loss that stops falling hints at it). A careful implementer could have written it from API-8's "moves every tensor
of `weights` into one buffer ... (parameters stay parameters ...)", keeping the *kind* (a Parameter) rather than
the *object*, and avoiding `.data`. Breaks API-8 ("keeps each tensor's Python object and value: afterwards the
object passed in holds the same tensors (parameters stay parameters, optimizers built before or after keep
working) and in-place updates write into the buffer").
"""
import torch
from torch import nn

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout, packing, wire  # noqa: F401
from weightsync.packing import Packed

VIOLATES = ("API-8",)


def pack(weights):
    flat = layout.flatten(weights, detach=False)
    if len({id(t) for t in flat.values()}) != len(flat):
        raise ValueError("tied tensors (one tensor under two names) cannot be packed: untie them, or send unpacked")
    detached = {k: v.detach() for k, v in flat.items()}
    manifest = layout.make_manifest(detached if isinstance(weights, nn.Module) else flat)
    wire.check_init_fits(manifest)
    devices = {e.device for e in manifest}
    if len(devices) > 1:
        raise NotImplementedError(f"weights on several devices {sorted(devices)}; move them to one device first")
    device = torch.device(devices.pop()) if devices else torch.device("cpu")
    buffer = torch.zeros(layout.slot_nbytes(manifest, str(device)), dtype=torch.uint8, device=device)
    tensors = list(flat.values())
    with torch.no_grad():
        for k, (name, t, view) in enumerate(zip(list(flat), tensors, layout.views(buffer, manifest))):
            view.copy_(t.detach())
            if isinstance(weights, nn.Module) and isinstance(t, nn.Parameter):
                # BUG: a new Parameter over the view, registered in place of the old one (no `.data` assignment)
                owner, _, attr = name.rpartition(".")
                new = nn.Parameter(view, requires_grad=t.requires_grad)
                setattr(weights.get_submodule(owner), attr, new)
                tensors[k] = new
            else:
                t.data = view
    return Packed(weights, list(flat), tensors, buffer, manifest)


packing.pack = pack
weightsync.pack = pack
