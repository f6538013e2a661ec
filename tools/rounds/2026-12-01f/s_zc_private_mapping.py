"""Bug: a receiver maps each CPU slot copy-on-write (MAP_PRIVATE, readable and writable) instead of read-only, so
a write into zero-copy weights does not fault: it succeeds and stays in the worker's own copy of that page. The
worker's weights then differ from what it acked, and the page stays its private copy for good: when the sender
later writes a new version into that slot and the worker applies it (and acks it ok), the written page still shows
the worker's old bytes, a mix of two versions, for every later version in that slot. The implementer wanted to
keep `torch.frombuffer` off read-only memory (it warns that writing there is undefined) and read SEC-6's "MUST NOT
let a write reach the slot" as the whole requirement: a private mapping guarantees that no write reaches the slot,
and its pages not yet written follow the slot as a shared one does.

Breaks SEC-6 ("the Python binding over torch, which has no read-only tensors, maps the slot read-only, so a write
faults in the writing process ... instead of corrupting the slot"), ZC-3 ("Writing into zero-copy weights is not
allowed (the reference maps CPU slots read-only, so a write faults ...)") and ACK-3 ("Ack(r, v, ok) promises that
r's weights equal, bit for bit, the bytes the sender published as version v").
"""
import mmap
import os

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, shm  # noqa: F401

VIOLATES = ("SEC-6", "ZC-3", "ACK-3")


def map_readonly(fd, nbytes):
    try:
        size = os.fstat(fd).st_size
        if size < nbytes:
            raise ValueError(f"the slot's buffer holds {size} bytes, its SlotInfo says {nbytes}")
        ro = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(fd)
    try:
        # BUG: copy-on-write instead of read-only: a write stays in this process rather than faulting
        m = mmap.mmap(ro, nbytes, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE) if nbytes else None
    finally:
        os.close(ro)
    import torch
    return shm._frombuffer(m) if m is not None else torch.empty(0, dtype=torch.uint8)


shm.map_readonly = map_readonly
