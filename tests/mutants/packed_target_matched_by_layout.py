"""Mutant: a copying receiver whose target is packed takes the one-copy apply (the slot's bytes copied whole into the
packed buffer) whenever the buffer is laid out like the slot entry by entry (dtype, shape, offset, size), without
comparing names. A worker that packs arrays of one shape in another order than the trainer's (two biases, experts)
gets each array's bytes in another's place, and every Ready and Ack says ok. Violates API-8 (a Packed target
receives each array by name), INIT-4 and ACK-3. From a fourteenth outside round.

Seam: apply._make.
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, apply  # noqa: F401
from weightsync.packing import Packed

VIOLATES = ("API-8", "INIT-4", "ACK-3")
KILLED_BY = ("conformance/test_pack.py::"
             "test_a_packed_target_laid_out_in_another_order_receives_each_array_by_name[all of one shape]",)


def _laid_out(manifest):
    return [(e.dtype, tuple(e.shape), e.offset, e.nbytes) for e in manifest]


def _make(rid, init, target, zero_copy, mapped, checker, stream):
    if zero_copy:
        return apply.ZeroCopy(rid, checker, target)
    slot = mapped[init.slot].tensor
    # BUG: the layout decides the one-copy path; the names (and so the order) are not compared
    if (isinstance(target, Packed) and _laid_out(target.manifest) == _laid_out(init.manifest)
            and target.buffer.device.type == "cpu" and target.buffer.numel() == slot.numel()):
        return apply.CopyToPacked(rid, checker, target)
    if target is None:
        return apply.CopyToOwn(rid, checker, init, slot, stream)
    return apply.CopyToTarget(rid, checker, target, stream)


apply._make = _make
