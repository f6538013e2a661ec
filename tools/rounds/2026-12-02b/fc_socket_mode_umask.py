"""Bug: a sender made with `listen="unix:PATH"` creates its socket file with whatever mode the process umask gives
(srwxr-xr-x under the usual 022, srwxrwxr-x under the 002 of a user-private-group system), not 0600: every other
user of the machine (or of the group) can connect to the trainer's socket, take Hello and try joins, and hold the
listener's pending-join places. A careful implementer could have written it from 14.3 and RDV-4: the join is
authenticated (a process without the secret "gets Hello and Refuse, nothing more"), so the file's mode looked like
belt and braces, and setting the umask around bind() (a process-wide setting, racy with other threads) or a chmod
after it was left out as the secret "already" keeps others out. Breaks RDV-8 ("A filesystem socket is created
with mode 0600").
"""
import socket

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, limits, rendezvous, wire  # noqa: F401
from weightsync.clock import monotonic

VIOLATES = ("RDV-8",)

_orig_init = rendezvous.Listener.__init__


def __init__(self, listen, num_workers, clock=monotonic):
    address = rendezvous.parse_address(listen)
    if address.path is None:
        return _orig_init(self, listen, num_workers, clock)
    import os
    import secrets
    self.num_workers = num_workers
    self.clock = clock
    self.master = secrets.token_bytes(limits.SECRET_BYTES)
    path = address.path
    sock = socket.socket(address.family, socket.SOCK_STREAM)
    try:
        if os.path.lexists(path):
            raise FileExistsError(f"{path} exists; choose a new path or remove it (RDV-8)")
        sock.bind(address.sockaddr)  # BUG: no umask/chmod: the join's secret keeps strangers out anyway
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    self.sock = sock
    self.address = address
    self.pending = []


rendezvous.Listener.__init__ = __init__
