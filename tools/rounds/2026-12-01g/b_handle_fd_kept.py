"""Bug: `Receiver(handle)` reads a duplicate of the handle's descriptor and leaves the handle's own descriptor open,
so the worker process holds two copies of its end of the channel. `receiver.close()` closes only its duplicate:
the sender does not see the end of the channel until the handle is collected, and a handle passed as a `Process`
argument lives as long as the worker. A worker that closes its receiver and goes on (it finished its episodes and
evaluates, or it makes a new Receiver from a fresh handle after an error) looks live to the trainer: the next send
to it waits its whole timeout for an ack and raises SyncTimeoutError instead of ReceiverDiedError, and the slots
that worker pinned stay pinned. A careful implementer could have written it because the handle's descriptor may be
the *sender's* copy when both live in one process (the reference's own comment: "the sender closes that one at
connect"), so they left closing it to its owner, the handle object, as one does with a borrowed file. Breaks LIFE-5
(`receiver.close()` ... "closes its channel"), CON-1 ("The end of a channel MUST be observable by the other side,
as end of file, when the peer process exits or closes its end") and SEND-3 (a receiver whose channel ended is gone).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, handshake, transport, wire  # noqa: F401
from weightsync.errors import LocalProtocolError

VIOLATES = ("LIFE-5", "CON-1", "SEND-3")


def open_handle(handle, clock):
    if handle.closed:
        raise LocalProtocolError(handshake.CLOSED_HANDLE.format(handle.receiver))
    if handle.given:
        raise LocalProtocolError(handle.given_away())
    if (why := handle.inherited()) is not None:
        raise LocalProtocolError(why)
    try:
        sock = handle.conn.dup()
    except OSError:
        raise LocalProtocolError(handshake.CLOSED_HANDLE.format(handle.receiver)) from None
    # BUG: the handle's own descriptor is left to the handle (it may be the sender's copy, closed at connect)
    return transport.Channel(sock, allowed=wire.FROM_SENDER, max_in=wire.MAX_TO_RECEIVER, takes_handles=True,
                             now=clock)


handshake.open_handle = open_handle
