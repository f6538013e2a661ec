"""Mutant: a send of packed weights (API-8) copies the packed buffer byte for byte into any slot of the
same size, a cast slot (LAYOUT-3) included, so a bf16 receiver of a small model gets fp32 bit patterns.
Violates API-8 ("A send MUST deliver exactly what it would deliver for the unpacked weights") and LAYOUT-3
("each version's bytes there are the weights rounded to it as a cast rounds").

Seam: slots.Slot._laid_like (whether a packed buffer holds a slot's bytes as they are): it forgets the cast.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, slots  # noqa: F401

VIOLATES = ("API-8", "LAYOUT-3")
KILLED_BY = ("conformance/test_pack.py::test_packed_weights_into_a_cast_slot_are_rounded_as_unpacked_ones_would_be",)


def _laid_like(self, buffer):
    return buffer.numel() == self.nbytes  # BUG: a cast slot of the same size is not laid out like the buffer


slots.Slot._laid_like = _laid_like
