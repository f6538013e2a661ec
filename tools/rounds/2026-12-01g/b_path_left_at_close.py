"""Bug: a sender made with `listen="unix:PATH"` closes its listening socket at `close()` but leaves the socket file at
PATH behind. A trainer that is restarted with the same configuration (a job re-queued after a crash, the next run of
a script, a second phase of a pipeline) then cannot listen again: `Sender(..., listen="unix:PATH")` raises
FileExistsError, since a sender must not take over a path that exists, and every worker's URL points at a dead
file. A careful implementer could have written it from the last sentence of RDV-8, "An abstract name and a TCP port
are released by the system when the listening socket closes", taking closing the socket to release every kind of
address, a filesystem path included, as it does for the two kinds listed. Breaks RDV-8 ("A filesystem socket is
created with mode 0600 and removed at `close()`").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.rendezvous import Listener

VIOLATES = ("RDV-8",)


def close(self):
    for j in self.pending:
        j.channel.close()
    self.pending = []
    self.sock.close()  # BUG: the socket's address is released by the system... but a path's file stays


Listener.close = close
