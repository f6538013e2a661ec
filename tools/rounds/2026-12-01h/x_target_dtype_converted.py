"""Bug: a copying receiver accepts a target whose floating-point tensors have another floating dtype than the
manifest's (a bf16 inference copy of an fp32 trainer's model) and fills it by a converting copy, since the batched
copy converts anyway. A worker built with `.bfloat16()` (or `.half()`) by mistake behind a trainer that did not ask
for cast slots connects and acks every version: its weights are the trainer's rounded, not the bytes published, and
nothing tells the trainer that it serves another precision than it sends. A careful implementer could have written it
from the dtypes guide ("Most RLHF setups train fp32 ... and serve them in bf16") and LAYOUT-3's "the weights rounded
to it as a cast rounds": the receiver doing the cast itself looked like the same result at no cost to the sender.
But the cast is the sender's, on request only. Breaks INIT-3 ("A receiver MUST check its target against the manifest
(names exactly, dtype, shape, device, dense layout) before applying") and LAYOUT-3 ("Without that request a receiver
whose target has another dtype is refused as before"), and with them ACK-3 (bit for bit).
"""
import dataclasses

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout  # noqa: F401
from weightsync.errors import WeightsMismatchError

VIOLATES = ("INIT-3", "LAYOUT-3", "ACK-3")

_ordered = layout.Checker.ordered


def ordered(self, flat, *, allow_grad=False):
    try:
        return _ordered(self, flat, allow_grad=allow_grad)
    except WeightsMismatchError:
        if not self.target:
            raise
        # BUG: a floating target of another floating dtype is filled by a converting copy
        relaxed = []
        for e in self.manifest:
            t = flat.get(e.name)
            if (hasattr(t, "dtype") and t.dtype in layout.CAST_DTYPES
                    and layout.dtype_of(e.dtype) in layout.CAST_DTYPES):
                e = dataclasses.replace(e, dtype=layout.dtype_name(t.dtype))
            relaxed.append(e)
        return _ordered(layout.Checker(relaxed, target=True), flat, allow_grad=allow_grad)


layout.Checker.ordered = ordered
