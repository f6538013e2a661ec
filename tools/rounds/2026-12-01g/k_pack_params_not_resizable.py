"""Bug: `Packed` watches for `resize_()` only on the tensors that are not `nn.Parameter`s (a module's buffers, the
values of a mapping), so a *frozen* parameter (`requires_grad=False`: a frozen embedding, a backbone held fixed while
a head trains, a LoRA base) that is resized in place is not noticed: the send goes through and delivers the bytes
left in the buffer at its place, in the old shape, instead of raising WeightsMismatchError. A careful implementer
could have written it from spec 10.6's "the tensors that do not require grad (the only ones `resize_()` accepts)",
read as "parameters cannot be resized" (torch refuses to resize a parameter of a training model, which requires
grad), and picked the tensors by type once instead of by their `requires_grad`. Only a parameter that stopped
requiring grad *after* the last full look is allowed to go unnoticed. Breaks API-8 ("A tensor that no longer views
the buffer where the manifest puts it (its .data replaced, resized) makes the next send that uses the Packed raise
WeightsMismatchError naming it, before any byte of any slot changes and without consuming a version") and BAD-2
(a shape that differs from the manifest entry "MUST be rejected with WeightsMismatchError").
"""
import torch

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, packing  # noqa: F401

VIOLATES = ("API-8", "BAD-2")


def _resizable(self):
    loose = [t for t in self.tensors if not isinstance(t, torch.nn.Parameter)]  # BUG: by type, not requires_grad
    return loose, sum(map(torch.Tensor.numel, loose))


packing.Packed._resizable = _resizable
