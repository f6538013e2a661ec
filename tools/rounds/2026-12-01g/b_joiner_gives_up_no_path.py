"""Bug: a worker joining by a `unix:PATH` URL tries again only while the connection is *refused*; when nothing is at
PATH yet (the trainer has not created its socket: the workers were launched first, or the trainer is slow to
build its model), `receiver.connect(timeout=...)` raises FileNotFoundError at once instead of waiting for the
trainer within its timeout. An abstract name or a TCP port with nobody listening are retried as they should be.
A careful implementer could have written it from RDV-6's "a connection refused because nobody listens yet ... is
tried again until that timeout", read as the errno ECONNREFUSED (what an unbound abstract name or TCP port gives)
rather than as "nobody listens there yet", which for a filesystem socket is ENOENT. Breaks RDV-6 ("a connection
refused because nobody listens yet, or closed before Hello, is tried again until that timeout") and INIT-5
(`connect` raises SyncTimeoutError when its timeout passes, not an OS error before it).
"""
import socket
import time

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, limits, rendezvous  # noqa: F401
from weightsync.errors import SyncTimeoutError

VIOLATES = ("RDV-6", "INIT-5")


def _connect(address, deadline, rid):
    pause = rendezvous._FIRST_PAUSE
    while True:
        sock = socket.socket(address.family, socket.SOCK_STREAM)
        try:
            sock.settimeout(max(deadline.cap(limits.JOIN_BOUND), 0.001))
            sock.connect(address.sockaddr)
            return sock
        except (TimeoutError, ConnectionRefusedError, BlockingIOError) as e:  # BUG: "refused" read as ECONNREFUSED
            sock.close()
            if deadline.expired():
                raise SyncTimeoutError([rid], None, hint=f"nobody listens at {address.text} ({e}) (RDV-6)") from None
        except BaseException:
            sock.close()
            raise
        time.sleep(deadline.cap(pause))
        pause = min(pause * 2, rendezvous._LAST_PAUSE)


rendezvous._connect = _connect
