"""Shared byte buffers: a sealed memfd per CPU slot, mapped once by the sender and read-only by receivers.

An anonymous memfd has no name under /dev/shm that could leak, and its memory is
freed when the last mapping goes (LIFE-4). Once the sender has mapped it, the
memfd is sealed against shrinking, growing and any new write (SEC-4): a
receiver can neither truncate the buffer under the trainer (which would kill
it with SIGBUS) nor rewrite the bytes other receivers read. Receivers are
given a read-only descriptor and map it read-only, so they hold no writable one.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import warnings

import torch

_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
F_SEAL_FUTURE_WRITE = getattr(fcntl, "F_SEAL_FUTURE_WRITE", 0x0010)  # Linux 5.1; absent from older Pythons
SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | F_SEAL_FUTURE_WRITE | fcntl.F_SEAL_SEAL


def _frombuffer(buf: mmap.mmap) -> torch.Tensor:
    with warnings.catch_warnings():
        # A read-only mapping is the point: a receiver cannot write a slot (SLOT-4).
        warnings.simplefilter("ignore", UserWarning)
        return torch.frombuffer(buf, dtype=torch.uint8)


class SealedBuffer:
    """The sender's side: a flat byte buffer in a memfd, writable only through this mapping.

    `handle` is a read-only descriptor of the same memfd, the one given to receivers (WIRE-4).
    """

    def __init__(self, nbytes: int, name: str = "weightsync"):
        self.nbytes = nbytes
        fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, nbytes)
            self._mmap: mmap.mmap | None = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED | _POPULATE)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
            self.handle: int | None = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
        finally:
            os.close(fd)  # the mapping keeps the memory; writes go through it only
        self.tensor: torch.Tensor | None = _frombuffer(self._mmap)  # None once closed

    def close(self) -> None:
        """Drops the descriptor and our references; the mapping goes with the last tensor viewing it."""
        if self.handle is not None:
            os.close(self.handle)
            self.handle = None
        self.tensor = None
        self._mmap = None


def map_readonly(fd: int, nbytes: int) -> torch.Tensor:
    """A receiver's view of a slot: mapped read-only from `fd`, which is then closed (SLOT-4, SEC-4).

    The mapping is checked against `nbytes` first, so a handle to a smaller buffer is
    refused instead of faulting later. Never unmapped explicitly: torch.frombuffer
    tensors do not pin the mmap, so an explicit unmap would leave zero-copy weights
    pointing at nothing; it goes with the last tensor that views it.
    """
    try:
        size = os.fstat(fd).st_size
        if size < nbytes:
            raise ValueError(f"the slot's buffer holds {size} bytes, its SlotInfo says {nbytes}")
        ro = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(fd)
    try:
        m = mmap.mmap(ro, nbytes, flags=mmap.MAP_SHARED | _POPULATE, prot=mmap.PROT_READ) if nbytes else None
    finally:
        os.close(ro)
    return _frombuffer(m) if m is not None else torch.empty(0, dtype=torch.uint8)
