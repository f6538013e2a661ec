"""Mutant: the receiver maps a slot's buffer at the size it has and reads what the SlotInfo says lies past its end
as zeros, as a reader built on pread(2) that takes a short read for the end of the data does: a sender whose slot
buffer is shorter than its SlotInfo's nbytes gets its version applied, the missing bytes zero, and acked ok.
Violates WIRE-8 ("A slot buffer holds at least SlotInfo.nbytes bytes, and a receiver MUST check that before
reading it"). Plausible: a copying receiver reads the slot once into its own buffer, and a short read looks
like nothing worse than padding.

Seam: weightsync.shm.map_readonly (no size check; a zero-filled copy of the bytes there are).
"""

import mmap
import os

import torch

from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, shm  # noqa: F401

VIOLATES = "WIRE-8"
KILLED_BY = (
    "conformance/test_receiver_wire.py::test_a_slot_shorter_than_its_layout_is_never_read"
    "[the Init's slot buffer shorter than its nbytes]",
)


def _map_readonly(fd, nbytes):
    try:
        size = os.fstat(fd).st_size
        m = mmap.mmap(fd, size, prot=mmap.PROT_READ) if size else None
    finally:
        os.close(fd)
    out = torch.zeros(nbytes, dtype=torch.uint8)  # BUG: what is not there reads as zeros
    if m is not None:
        n = min(size, nbytes)
        out[:n] = torch.frombuffer(bytearray(m[:n]), dtype=torch.uint8)
    return out


shm.map_readonly = _map_readonly
