"""Mutant: `Packed.check()` compares the references to the buffer's storage with the number it had at packing, for
good: any number not below it passes as "nothing left the buffer". A trainer that keeps views of its packed weights
(`best = net.state_dict()`) raises the count for good, and a tensor whose `.data` is replaced sends after that are
not noticed: the send delivers the stale bytes at its place. Violates API-8 (a tensor that no longer views the
buffer makes the next send raise WeightsMismatchError) and BAD-2. From a thirteenth outside round.

Seam: Packed.check.
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, packing  # noqa: F401

VIOLATES = ("API-8", "BAD-2")
KILLED_BY = ("conformance/test_pack.py::test_a_tensor_that_left_the_buffer_is_refused_before_any_byte_changes"
             "[data replaced, views kept since an earlier send]",)

_check = packing.Packed.check


def check(self):
    count = self._use_count()
    mark = self.__dict__.setdefault("_at_packing", self._count)
    if count is not None and count >= mark and self.buffer.data_ptr() == self._ptr:  # BUG: the mark never moves
        self._count = count
    _check(self)


packing.Packed.check = check
