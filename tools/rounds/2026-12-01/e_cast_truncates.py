"""Bug: a sender asked for bf16 slots (`Sender(..., dtypes=torch.bfloat16)`, LAYOUT-3) converts each float32
array by keeping the high 16 bits of every element, the well-known "bf16 is float32 with its low half cut off"
shortcut done in bulk on the raw bits (no per-element rounding pass, no extra temporary). That truncates toward
zero: about half the elements differ in their last bit from what a cast gives. LAYOUT-3: each version's bytes in
a cast slot are the weights rounded to that dtype as a cast rounds (round to nearest, ties to even)."""
import torch

from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.layout import Packer

VIOLATES = ("LAYOUT-3",)

_orig = Packer.write


def _buggy(self, tensors):
    if all(v.dtype == t.dtype for v, t in zip(self.views, tensors)):
        return _orig(self, tensors)
    with torch.no_grad():
        for v, t in zip(self.views, tensors):
            if v.dtype == torch.bfloat16 and t.dtype == torch.float32 and v.device == t.device:
                high = t.detach().contiguous().view(torch.int32) >> 16  # the upper half: sign, exponent, 7 bits
                v.view(torch.int16).copy_(high.to(torch.int16))
            else:
                v.copy_(t)


Packer.write = _buggy
