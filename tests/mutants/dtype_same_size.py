"""Mutant, written apart from the suite: the sender checks each entry's shape and element size (what the slot layout
needs) but not its dtype, and lets copy_ cast: int32 for a float32 entry, bfloat16 for float16,
int16 for float16 ... are silently converted. Violates BAD-2."""

from collections.abc import Mapping

import torch

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Sender as _Sender
from weightsync import layout

VIOLATES = "BAD-2"


class _SizeOnlyChecker(layout.Checker):
    def ordered(self, flat, *, allow_grad=False):
        if isinstance(flat, Mapping):
            fixed = dict(flat)
            for name, (dtype, shape, device) in zip(self.names, self._expect):
                t = fixed.get(name)
                if (isinstance(t, torch.Tensor) and t.dtype != dtype and t.shape == shape
                        and t.element_size() == torch.empty((), dtype=dtype).element_size()):
                    fixed[name] = t.to(dtype)  # BUG: silent cast
            flat = fixed
        return super().ordered(flat, allow_grad=allow_grad)


class Sender(_Sender):
    def __init__(self, weights, num_workers, *, devices=None, ctx=None, max_slots=None):
        super().__init__(weights, num_workers, devices=devices, ctx=ctx, max_slots=max_slots)
        self._checker = _SizeOnlyChecker(self._manifest)
