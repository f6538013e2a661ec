"""Bug: `Sender(..., dtypes=d)` casts a floating entry only when d is narrower than the entry's dtype; floating
entries as narrow as d or narrower keep their dtype. With mixed-precision weights (float32 matrices beside bf16
norms or an fp16 embedding) and `dtypes=torch.float16`, the bf16 entries reach the fp16 worker as bf16: a target
built in fp16 throughout is refused at connect (WeightsMismatchError), and a worker with target=None gets bf16
tensors it did not ask for. A careful implementer could have written it from LAYOUT-3's example and purpose ("an
fp32 trainer, bf16 workers", slots that cost less), reading the cast as a precision cap: rounding down saves memory,
while "casting" a 2-byte array to another 2-byte dtype (or widening one) gains nothing, so such entries are left as
they are. Breaks LAYOUT-3 ("That receiver's Init then names the chosen dtype for every floating-point entry of the
manifest ... each version's bytes there are the weights rounded to it").
"""
import dataclasses

import torch

import weightsync  # noqa: F401
import weightsync.layout as _layout
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("LAYOUT-3",)


def cast_manifest(manifest, dtype):
    def laid(e):
        src = _layout.dtype_of(e.dtype)
        # BUG: only an entry wider than the chosen dtype is rounded to it; the others are "already small enough"
        if src.is_floating_point and src.itemsize > dtype.itemsize:
            return dtype
        return src

    flat = {e.name: torch.empty(e.shape, dtype=laid(e), device="meta") for e in manifest}
    devices = [e.device for e in manifest]
    return tuple(dataclasses.replace(e, device=d) for e, d in zip(_layout.make_manifest(flat), devices))


_layout.cast_manifest = cast_manifest
