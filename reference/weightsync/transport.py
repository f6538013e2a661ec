"""Channels and shared buffers over what the OS offers, with a bound on every wait.

A channel is one end of a Unix socket pair (multiprocessing's duplex Pipe):
ordered, reliable, and able to carry file descriptors beside a message (ROLE-2).
When the peer process exits, the kernel closes its end and a read returns end
of file: that is how a dead peer is seen without a timeout (SEND-3).

A slot's bytes live in an anonymous memfd mapped into each process: no name in
/dev/shm can leak, and the memory is freed when the last mapping goes (LIFE-4).
"""

from __future__ import annotations

import math
import mmap
import os
import select
import socket
import time
import warnings
from multiprocessing import connection, reduction

import torch

from .protocol import decode, encode

class ChannelClosed(Exception):
    """The peer's end is gone (end of file, reset, broken pipe)."""


class Channel:
    """One end of a duplex connection that sends messages and file descriptors."""

    def __init__(self, conn: connection.Connection):
        self.conn = conn
        self._poller = select.poll()
        self._poller.register(conn.fileno(), select.POLLIN)

    def fileno(self) -> int:
        return self.conn.fileno()

    @property
    def closed(self) -> bool:
        return self.conn.closed

    def send(self, msg: object, fds: tuple[int, ...] = ()) -> None:
        try:
            self.conn.send_bytes(encode(msg))
            if fds:
                with socket.socket(fileno=os.dup(self.conn.fileno())) as sock:
                    reduction.sendfds(sock, list(fds))
        except (OSError, EOFError) as e:
            raise ChannelClosed(str(e)) from e

    def recv_fds(self, n: int) -> list[int]:
        if n == 0:
            return []
        try:
            with socket.socket(fileno=os.dup(self.conn.fileno())) as sock:
                return list(reduction.recvfds(sock, n))
        except (OSError, EOFError, RuntimeError) as e:
            raise ChannelClosed(str(e)) from e

    def poll(self, timeout: float | None) -> bool:
        """True when a message (or end of file) is ready within `timeout` seconds."""
        if self.conn.closed:
            raise ChannelClosed("channel closed")
        return bool(self._poller.poll(_millis(timeout)))

    def recv(self) -> object:
        try:
            data = self.conn.recv_bytes()
        except (OSError, EOFError) as e:
            raise ChannelClosed(str(e) or "end of file") from e
        return decode(data)

    def close(self) -> None:
        self.conn.close()


def pipe() -> tuple[Channel, connection.Connection]:
    """A channel for the sender and the raw connection that goes into a handle."""
    ours, theirs = connection.Pipe(duplex=True)
    return Channel(ours), theirs


def _millis(timeout: float | None) -> int:
    return -1 if timeout is None else math.ceil(max(0.0, timeout) * 1000)


def wait(channels: list, timeout: float | None) -> list:
    """The channels (or raw fds) with a message or end of file ready, waiting at most `timeout`."""
    if not channels:
        return []
    poller = select.poll()
    by_fd = {}
    for ch in channels:
        fd = ch if isinstance(ch, int) else ch.fileno()
        by_fd[fd] = ch
        poller.register(fd, select.POLLIN)
    return [by_fd[fd] for fd, _ in poller.poll(_millis(timeout))]


class Deadline:
    """A point in time after which blocking calls stop; None waits forever."""

    def __init__(self, timeout: float | None):
        if timeout is not None and timeout < 0:
            raise ValueError(f"timeout must be >= 0 or None, got {timeout}")
        self.at = None if timeout is None else time.monotonic() + timeout

    def left(self) -> float | None:
        return None if self.at is None else max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at


_POPULATE = getattr(mmap, "MAP_POPULATE", 0)


class SharedBuffer:
    """A flat byte buffer in shared memory, backed by a memfd, seen as a uint8 tensor."""

    def __init__(self, nbytes: int, fd: int | None = None, *, writable: bool = True, name: str = "weightsync"):
        self.nbytes = nbytes
        if fd is None:
            fd = os.memfd_create(name, os.MFD_CLOEXEC)
            os.ftruncate(fd, nbytes)
        self.fd = fd
        prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
        self._mmap = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED | _POPULATE, prot=prot)
        with warnings.catch_warnings():
            # A read-only mapping is the point: a receiver cannot write a slot (SLOT-4).
            warnings.simplefilter("ignore", UserWarning)
            self.tensor = torch.frombuffer(self._mmap, dtype=torch.uint8)

    def close_fd(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def close(self) -> None:
        """Drops our fd and our references; the mapping goes with the last tensor viewing it.

        Never unmapped explicitly: torch.frombuffer tensors do not pin the mmap, so
        an explicit unmap would leave zero-copy weights pointing at nothing.
        """
        self.close_fd()
        self.tensor = None
        self._mmap = None
