"""Mutant, written apart from the suite: the sender accepts a tensor whose shape merely *broadcasts* to the
manifest entry's shape (it trusts copy_ to complain about shapes). Violates BAD-2.

Seam: the sender's manifest checker (layout.Checker.ordered), which expands such a tensor to the entry's shape.
"""

import functools
from collections.abc import Mapping

import torch

from weightsync import *
from weightsync import CAPABILITIES, __all__, layout  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "BAD-2"
KILLED_BY = ("conformance/test_failures.py::test_each_kind_of_bad_input_is_rejected_for_every_entry[broadcast]",)


class _LaxChecker(layout.Checker):
    def ordered(self, flat, *, allow_grad=False):
        if isinstance(flat, Mapping):
            fixed = dict(flat)
            for name, (dtype, shape, _device) in zip(self.names, self._expect):
                t = fixed.get(name)
                if isinstance(t, torch.Tensor) and t.shape != shape and t.dtype == dtype:
                    try:
                        if torch.broadcast_shapes(t.shape, shape) == shape:
                            fixed[name] = t.expand(shape)  # BUG: "copy_ will broadcast it anyway"
                    except RuntimeError:
                        pass
            flat = fixed
        return super().ordered(flat, allow_grad=allow_grad)


class Sender(_Sender):
    @functools.wraps(_Sender.__init__)  # the public signature stays the reference's (API-1)
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._publisher.checker = _LaxChecker(self.manifest)
