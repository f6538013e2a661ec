"""Mutant: `Packed` watches for `resize_()` only the tensors that are not `nn.Parameter`s (a module's buffers, a
mapping's values), so a frozen parameter (`requires_grad=False` since packing: a fixed backbone, a LoRA base) that
is resized is not noticed and the send delivers the old shape's bytes. Spec 10.6 lets go unnoticed only a parameter
that stopped requiring grad after the last full look. Violates API-8 (a resized tensor makes the next send raise
WeightsMismatchError) and BAD-2. From a thirteenth outside round.

Seam: Packed._resizable.
"""
import torch

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, packing  # noqa: F401

VIOLATES = ("API-8", "BAD-2")
KILLED_BY = ("conformance/test_pack.py::test_a_tensor_that_left_the_buffer_is_refused_before_any_byte_changes"
             "[a frozen parameter resized]",)


def _resizable(self):
    loose = [t for t in self.tensors if not isinstance(t, torch.nn.Parameter)]  # BUG: by type, not requires_grad
    return loose, sum(map(torch.Tensor.numel, loose))


packing.Packed._resizable = _resizable
