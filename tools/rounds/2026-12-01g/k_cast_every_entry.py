"""Bug: a receiver given cast slots (`Sender(..., dtypes=torch.bfloat16)`, LAYOUT-3) gets *every* entry of the
manifest in that dtype, integer and bool buffers included: a BatchNorm's `num_batches_tracked`, a step or episode
counter, an int64 index table or a bool mask reach the worker as bf16. A worker with a target module is refused at
connect (its int64 buffer does not match the bf16 entry), and a worker with `target=None` reads `weights` whose
counters drift once they pass 256 (bf16 holds 8 significant bits: after 257 steps it reads 256) and whose masks are
floats. A careful implementer could have written it from LAYOUT-3's "That receiver's Init then names the chosen dtype"
and the `dtypes=` option read as "the dtype the worker runs in", laying the cast manifest out with the chosen dtype
for each entry as `model.to(dtype)` is often imagined to do. Breaks LAYOUT-3 ("names the chosen dtype for every
floating-point entry of the manifest ... and integer and bool entries as they are"; "each version's bytes there are
the weights rounded to it as a cast rounds") and ACK-3 (an ok Ack promises the weights equal the bytes published).
"""
import dataclasses

import torch

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout  # noqa: F401

VIOLATES = ("LAYOUT-3", "ACK-3")


def cast_manifest(manifest, dtype):
    flat = {e.name: torch.empty(e.shape, dtype=dtype, device="meta") for e in manifest}  # BUG: every entry
    devices = [e.device for e in manifest]
    return tuple(dataclasses.replace(e, device=d) for e, d in zip(layout.make_manifest(flat), devices))


layout.cast_manifest = cast_manifest
