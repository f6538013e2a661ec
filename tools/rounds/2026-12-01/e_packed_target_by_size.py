"""Bug: a copying receiver whose target is packed weights (`pack()`, API-8) takes the one-copy path, the slot's
bytes copied over the target's whole buffer, whenever that buffer is as large as the slot, the same test the
sender makes before a raw copy into a slot. It does not check that the target was packed in the manifest's order.
A worker model that registers the same layers in another order (same names, dtypes and shapes, so the target
check of INIT-3, which matches names, passes) has every array at another offset of its buffer: each tensor
receives another array's bytes, and the receiver acks ok. API-8: a Packed target is accepted wherever the weights
it came from are, and ACK-3: the acked weights equal the published bytes."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import apply as _apply
from weightsync.packing import Packed as _Packed

VIOLATES = ("API-8", "ACK-3")

_orig = _apply._make


def _buggy(rid, init, target, zero_copy, mapped, checker, stream):
    if not zero_copy and isinstance(target, _Packed):
        slot = mapped[init.slot].tensor
        if slot is not None and target.buffer.device.type == "cpu" and target.buffer.numel() == slot.numel():
            return _apply.CopyToPacked(rid, checker, target)  # laid out like the slot: one copy (by its size)
    return _orig(rid, init, target, zero_copy, mapped, checker, stream)


_apply._make = _buggy
