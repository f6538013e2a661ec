"""Bug: the sender seals each CPU slot's memfd against shrinking and growing only (F_SEAL_SHRINK, F_SEAL_GROW,
F_SEAL_SEAL), not against writes, and relies on the read-only descriptor it hands out to keep receivers from
writing. A receiver process (buggy or taken over) reopens its slot descriptor through /proc/self/fd with write
access and `pwrite`s into the slot: every zero-copy worker that reads that slot now runs weights the trainer never
published, and the next copying worker that applies it copies the corruption. The implementer knew that F_SEAL_WRITE
cannot be added while the sender keeps its own writable shared mapping (it fails with EBUSY), took "gives receivers
read-only descriptors of it; a receiver keeps no descriptor that allows writing" as the write protection, and
sealed what a read-only descriptor cannot stop (ftruncate of the size), missing F_SEAL_FUTURE_WRITE, which exists
for exactly this case.

Breaks SEC-4 ("the sender seals each CPU slot's memfd against shrinking, growing and further writes
(`F_SEAL_SHRINK`, `F_SEAL_GROW`, `F_SEAL_FUTURE_WRITE`, then `F_SEAL_SEAL`) ... The seals, not the descriptors, are
what protect the slot (a receiver may reopen its descriptor through `/proc/self/fd` with write access): `ftruncate`,
`write`, `pwrite`, `fallocate` and a writable shared mapping through any descriptor a receiver holds or can open
fail; ... every other receiver keeps reading the bytes the sender published") and SEC-5 ("One receiver's failure
MUST NOT change another's: ... leaves every other receiver's state, version, weights ... as they were").
"""
import fcntl
import mmap
import os

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, shm  # noqa: F401

VIOLATES = ("SEC-4", "SEC-5")


def __init__(self, nbytes, name="weightsync"):
    self.nbytes = nbytes
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, nbytes)
        self._mmap = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED | shm._POPULATE)
        # BUG: the size is sealed, writes are left to the read-only descriptor below
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        self.handle = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(fd)
    self.tensor = shm._frombuffer(self._mmap)


shm.SealedBuffer.__init__ = __init__
