"""Bug: `Receiver(handle)` in the process that pickled the handle away is not refused: the implementer put the
"one process" rule of CON-3 only where the handle is pickled, reading the spec's "Pickling is the one moment a
handle leaves a process, so it is where the second copy is refused" as the whole rule, and checks in
`Receiver()` only that the handle was not consumed and did not come by fork. CON-3 says so MUST
`Receiver(handle)` in a process whose handle was pickled away raise LocalProtocolError: here the trainer's
process (a test harness, a fallback "run the worker inline" path) and the worker both read one channel, and
split its frames between them.
"""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

from weightsync import handshake as _hs
from weightsync import receiver as _rm
from weightsync import transport, wire
from weightsync.errors import LocalProtocolError

VIOLATES = ("CON-3",)


def open_handle(handle, clock):
    if handle.closed:
        raise LocalProtocolError(_hs.CLOSED_HANDLE.format(handle.receiver))
    # BUG: no check of handle.given: a handle pickled to another process is taken here too.
    if (why := handle.inherited()) is not None:
        raise LocalProtocolError(why)
    try:
        sock = handle.conn.dup()
    except OSError:
        raise LocalProtocolError(_hs.CLOSED_HANDLE.format(handle.receiver)) from None
    handle.conn.close()
    return transport.Channel(sock, allowed=wire.FROM_SENDER, max_in=wire.MAX_TO_RECEIVER, takes_handles=True,
                             now=clock)


_hs.open_handle = open_handle
_rm.handshake.open_handle = open_handle
