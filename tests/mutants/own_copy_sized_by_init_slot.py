"""Mutant: a copying receiver without a target copies each slot whole into a buffer of its own sized like the Init's
slot, so a version in a slot introduced later with another size (any size that holds every array is legal) fails
the copy: the receiver answers Ack(error) for a version it could apply. Violates LAYOUT-1 (a receiver accepts any
slot size that holds every array of the manifest), ACK-1 and ACK-3. From a fourteenth outside round, where a
colleague found it in the reference (fixed: the copy now takes the arrays' bytes only).

Seam: apply.CopyToOwn.
"""
import torch

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, apply  # noqa: F401

VIOLATES = ("LAYOUT-1", "ACK-1", "ACK-3")
KILLED_BY = ("conformance/test_receiver_wire.py::test_slots_of_other_sizes_than_the_init_s_are_applied",)

_init = apply.CopyToOwn.__init__


def __init__(self, rid, checker, init, slot, stream):
    _init(self, rid, checker, init, slot, stream)
    if self._bytes is not None:
        self._bytes = torch.empty_like(slot)  # BUG: the Init's slot's size, not the arrays'
        self._end = slot.numel()  # and every later slot is copied whole into it
        from weightsync import layout

        self._own = layout.views(self._bytes, init.manifest)


apply.CopyToOwn.__init__ = __init__
