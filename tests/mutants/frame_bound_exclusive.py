"""Mutant §: the frame reader refuses a length equal to its bound (>= instead of >), so a receiver's frame
of exactly 65,536 payload bytes, legal by the wire profile, is taken for a violation and the receiver is
cut off. Violates WIRE-2 ("a length above the bound ... is a violation": the bound itself is legal).

Seam: FrameReader's bound, one less than it is given.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, wire  # noqa: F401

VIOLATES = "WIRE-2"
KILLED_BY = ("conformance/test_wire.py::test_a_frame_of_exactly_the_bound_is_read",)

_init = wire.FrameReader.__init__


def _one_less(self, max_frame):
    _init(self, max_frame - 1)  # BUG: a frame of exactly the bound is refused


wire.FrameReader.__init__ = _one_less
