"""Mutant, written apart from the suite: the sender accepts a tensor whose shape merely *broadcasts* to the
manifest entry's shape (it trusts copy_ to complain about shapes). Violates BAD-2."""

from collections.abc import Mapping

import torch

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Sender as _Sender
from weightsync import layout

VIOLATES = "BAD-2"


class _LaxChecker(layout.Checker):
    def ordered(self, flat, *, allow_grad=False):
        if isinstance(flat, Mapping):
            fixed = dict(flat)
            for name, (dtype, shape, device) in zip(self.names, self._expect):
                t = fixed.get(name)
                if isinstance(t, torch.Tensor) and t.shape != shape and t.dtype == dtype:
                    try:
                        if torch.broadcast_shapes(t.shape, shape) == shape:
                            fixed[name] = t.expand(shape)  # "copy_ will broadcast it anyway"
                    except RuntimeError:
                        pass
            flat = fixed
        return super().ordered(flat, allow_grad=allow_grad)


class Sender(_Sender):
    def __init__(self, weights, num_workers, *, devices=None, ctx=None, max_slots=None):
        super().__init__(weights, num_workers, devices=devices, ctx=ctx, max_slots=max_slots)
        self._checker = _LaxChecker(self._manifest)
