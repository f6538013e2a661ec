"""Bug: with `Sender(..., dtypes=torch.bfloat16)` every entry of the cast receivers' manifest becomes
bfloat16, integer and bool entries included: a step counter (int64) arrives rounded to bfloat16 (257
reads as 256), and a worker whose target keeps that counter as int64 is refused at connect. LAYOUT-3:
the Init names the chosen dtype for every floating-point entry, "and integer and bool entries as they
are". Plausible: the cast is applied to the manifest wholesale; models of float weights only pass.

Seam: weightsync.layout.cast_manifest.
"""
import dataclasses as _dc

import torch as _torch

from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import layout as _layout

VIOLATES = "LAYOUT-3"


def _cast_manifest(manifest, dtype):
    flat = {e.name: _torch.empty(e.shape, dtype=dtype, device="meta") for e in manifest}
    return tuple(_dc.replace(e, device=d) for e, d in zip(_layout.make_manifest(flat), [e.device for e in manifest]))


_layout.cast_manifest = _cast_manifest
