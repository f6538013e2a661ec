"""Bug: a sender made with `listen="unix:PATH"` removes whatever is at PATH before it binds, as most Unix-socket
servers do to clear the socket a crashed run left behind. But a socket there may belong to a trainer that is still
running (two jobs given one path by a launcher, a restarted trainer whose predecessor has not exited): the new
sender silently takes the path over, and every worker of the first trainer that restarts with its URL, as RDV-5
has it, now reaches the second one and is refused (its secret is not this sender's), while the first trainer
waits for it in `connect(workers=[i])` until its timeout. Any other file at the path is deleted. The implementer
read RDV-8's "removed at `close()`" as the lifecycle of the file, so that a file found at bind time is a stale
one from a run that could not close.

Breaks RDV-8 ("a sender MUST NOT take over a path that exists") and RDV-5 ("A restart is therefore a new process
given the same URL").
"""
import os
import socket
import stat

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, rendezvous  # noqa: F401
from weightsync.clock import monotonic

VIOLATES = ("RDV-8", "RDV-5")


def __init__(self, listen, num_workers, clock=monotonic):
    self.num_workers = num_workers
    self.clock = clock
    self.master = rendezvous.secrets.token_bytes(rendezvous.limits.SECRET_BYTES)
    address = rendezvous.parse_address(listen)
    path = address.path
    sock = socket.socket(address.family, socket.SOCK_STREAM)
    try:
        if address.kind == "tcp":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        elif path is not None and os.path.lexists(path):
            os.unlink(path)  # BUG: a leftover of a run that did not close: clear it and bind
        old = os.umask(0o177) if path is not None else None
        try:
            sock.bind(address.sockaddr)
        finally:
            if old is not None:
                os.umask(old)
        if path is not None:
            os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    self.sock = sock
    self.address = rendezvous._bound(address, sock)
    self.pending = []


rendezvous.Listener.__init__ = __init__
