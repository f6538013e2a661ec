"""Mutant (the outside round of 2026-11-29, written without reading the suite): the frame reader skips frames of length 0 as keep-alives instead of treating them as a
violation: a receiver that sends empty frames (garbage, or a peer of another framing) is not cut off.
WIRE-1: each frame carries exactly one message, and L = 0 is a violation. Plausible: zero-length
frames are keep-alives in several framings, and skipping them looks harmless.

Seam: weightsync.wire.FrameReader.next (wrapped).
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import wire as _wire

VIOLATES = "WIRE-1"
KILLED_BY = ('conformance/test_wire.py::test_a_receiver_that_breaks_the_wire_is_cut_off_alone[zero-length frame]',)

_orig = _wire.FrameReader.next


def _next(self):
    while len(self._buf) - self._pos >= 4 and self._buf[self._pos:self._pos + 4] == b"\0\0\0\0":
        self._pos += 4  # an empty frame: a keep-alive
    return _orig(self)


_wire.FrameReader.next = _next
