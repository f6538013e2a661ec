"""Mutant (from the outside round of 2026-12-01, where it survived): a copying receiver whose target is packed
weights (`pack()`, API-8) copies the slot over the target's whole buffer whenever that buffer is as large as the
slot, without checking that the target was packed in the manifest's order (the size test the sender makes before
its own raw copy). A target packed from the same names in another order gets every tensor filled with the bytes
at its offset, another array's, and acks ok. Violates API-8 and ACK-3 (the acked weights are the published ones).

Seam: apply._make, which picks the one-copy path by size alone.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import apply as _apply
from weightsync.packing import Packed as _Packed

VIOLATES = ("API-8", "ACK-3")
KILLED_BY = ("conformance/test_pack.py::test_a_packed_target_laid_out_in_another_order_receives_each_array_by_name",)

_make = _apply._make


def _by_size(rid, init, target, zero_copy, mapped, checker, stream):
    if not zero_copy and isinstance(target, _Packed):
        slot = mapped[init.slot].tensor
        if slot is not None and target.buffer.device.type == "cpu" and target.buffer.numel() == slot.numel():
            return _apply.CopyToPacked(rid, checker, target)  # BUG: laid out like the slot judged by size alone
    return _make(rid, init, target, zero_copy, mapped, checker, stream)


_apply._make = _by_size
