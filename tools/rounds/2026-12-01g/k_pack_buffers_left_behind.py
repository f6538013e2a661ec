"""Bug: `pack()` re-homes only the *parameters* (`p.data = view`); every other tensor (a module's buffers, the values
of a mapping or TensorDict) has its value copied into the buffer and the `Packed` maps its name to that view, while
the module or mapping keeps its own tensor. Nothing fails: every send is one copy of the buffer and acks ok, but
what the training loop changes in place in those tensors never reaches the buffer. A packed model with BatchNorm
sends its workers the running statistics it had at packing for the whole run (its `running_mean`, `running_var`,
`num_batches_tracked` move on the trainer, never on the workers), and a packed mapping whose tensors the caller
updates through its own references publishes the same values forever. A careful implementer could have written it
from API-8's reason for keeping identities, "parameters stay parameters, optimizers built before or after keep
working": only parameters are held by anything else (the optimizer), so only they need to keep their object, and
assigning `.data` of plain tensors the caller owns looked like a liberty to avoid. Breaks API-8 ("keeps each
tensor's Python object and value: afterwards the object passed in holds the same tensors ... and in-place updates
write into the buffer"; "A send MUST deliver exactly what it would deliver for the unpacked weights") and CONS-4
(the sender publishes what the caller's tensors hold when the send is made).
"""
import torch

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout, packing, wire  # noqa: F401

VIOLATES = ("API-8", "CONS-4")


def pack(weights):
    flat = layout.flatten(weights, detach=False)
    if len({id(t) for t in flat.values()}) != len(flat):
        raise ValueError("tied tensors (one tensor under two names) cannot be packed: untie them, or send unpacked")
    detached = {k: v.detach() for k, v in flat.items()}
    manifest = layout.make_manifest(detached if isinstance(weights, torch.nn.Module) else flat)
    wire.check_init_fits(manifest)
    devices = {e.device for e in manifest}
    if len(devices) > 1:
        raise NotImplementedError(f"weights on several devices {sorted(devices)}; move them to one device first")
    device = torch.device(devices.pop()) if devices else torch.device("cpu")
    buffer = torch.zeros(layout.slot_nbytes(manifest, str(device)), dtype=torch.uint8, device=device)
    tensors = list(flat.values())
    with torch.no_grad():
        for i, view in enumerate(layout.views(buffer, manifest)):
            t = tensors[i]
            view.copy_(t.detach())
            if isinstance(t, torch.nn.Parameter):
                t.data = view  # the optimizer holds the parameter: same object, new home
            else:
                tensors[i] = view  # BUG: a plain tensor is the caller's: the Packed maps its name to the copy
    return packing.Packed(weights, list(flat), tensors, buffer, manifest)


packing.pack = pack
weightsync.pack = pack
