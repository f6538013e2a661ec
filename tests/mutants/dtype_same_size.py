"""Mutant, written apart from the suite: the sender checks each entry's shape and element size (what the slot
layout needs) but not its dtype, and lets copy_ cast: int32 for a float32 entry, bfloat16 for float16,
int16 for float16 ... are silently converted. Violates BAD-2.

Seam: the sender's manifest checker (layout.Checker.ordered), which casts such a tensor to the entry's dtype.
"""

import functools
from collections.abc import Mapping

import torch

from weightsync import *
from weightsync import CAPABILITIES, __all__, layout  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "BAD-2"
KILLED_BY = ("conformance/test_failures.py::test_each_kind_of_bad_input_is_rejected_for_every_entry[cast]",)


class _SizeOnlyChecker(layout.Checker):
    def ordered(self, flat, *, allow_grad=False):
        if isinstance(flat, Mapping):
            fixed = dict(flat)
            for name, (dtype, shape, _device) in zip(self.names, self._expect):
                t = fixed.get(name)
                if (isinstance(t, torch.Tensor) and t.dtype != dtype and t.shape == shape
                        and t.element_size() == torch.empty((), dtype=dtype).element_size()):
                    fixed[name] = t.to(dtype)  # BUG: silent cast
            flat = fixed
        return super().ordered(flat, allow_grad=allow_grad)


class Sender(_Sender):
    @functools.wraps(_Sender.__init__)  # the public signature stays the reference's (API-1)
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._publisher.checker = _SizeOnlyChecker(self.manifest)
