"""How a receiver comes to its Init: a channel of its own from a handle, then the first message that counts.

These are the steps of connect() (spec section 6) that touch no weights. What follows
the Init (its checks, the slots mapped, its version applied before Ready, INIT-4) stays
in receiver.py, where the weights are.
"""

from __future__ import annotations

from . import transport, wire
from .clock import Clock, Deadline
from .errors import FIX, ClosedError, LocalProtocolError, SyncTimeoutError
from .messages import Init, Stop
from .receiving import ReceiverMachine
from .session import Ended, Message
from .transport import Handle

CLOSED_HANDLE = ("handle({}) is closed; ask the sender for a new one (LIFE-2). In the sender's own process, make the "
                 "Receiver before sender.connect(): the handle is the sender's copy, which connect() closes")


def open_handle(handle: Handle, clock: Clock) -> transport.Channel:
    """This process's own channel from `handle`, whose descriptor is then closed (LIFE-2).

    The handle's descriptor may be the sender's copy when both live in one process, and
    the sender closes that one at connect; so the receiver reads a duplicate of its own.

    Raises:
        LocalProtocolError: a handle consumed by connect(), given to another process, or inherited by fork.
    """
    if handle.closed:
        raise LocalProtocolError(CLOSED_HANDLE.format(handle.receiver))
    if handle.given:
        raise LocalProtocolError(handle.given_away())
    if (why := handle.inherited()) is not None:
        raise LocalProtocolError(why)
    try:
        sock = handle.conn.dup()
    except OSError:  # closed after the check above: the sender connected meanwhile
        raise LocalProtocolError(CLOSED_HANDLE.format(handle.receiver)) from None
    handle.conn.close()
    return transport.Channel(sock, allowed=wire.FROM_SENDER, max_in=wire.MAX_TO_RECEIVER, takes_handles=True,
                             now=clock)


def await_init(channel: transport.Channel, machine: ReceiverMachine, deadline: Deadline) -> tuple[Init, list[int]]:
    """The Init that opens the handshake, with the handles that came with it; Heartbeats before it pass (MSG-4).

    Raises:
        SyncTimeoutError: no Init by `deadline` (INIT-5).
        ClosedError: the sender closed, or sent Stop, first.
        RemoteProtocolError: a message the machine refuses here, a Receive or a second Init (SM-R-7).
    """
    while True:
        event = channel.wait_event(deadline)  # the session judges: SM-R-7, SLOT-1, SLOT-5, WIRE-7; MSG-4
        if event is None:
            raise SyncTimeoutError([machine.id], None, hint=f"no Init from the sender (INIT-5). {FIX}the trainer "
                                   "must call sender.connect() within this connect(): start it, or pass a "
                                   "longer timeout=")
        if isinstance(event, Ended):
            machine.channel_closed()
            raise ClosedError(f"receiver {machine.id}: the sender is gone before the handshake")
        if isinstance(event, Message):
            msg, fds = event.msg, event.fds
            break
    if isinstance(msg, Stop):
        raise ClosedError(f"receiver {machine.id}: the sender closed before the handshake")
    assert isinstance(msg, Init), "in state new the machine lets only Init and Stop through (SM-R-7)"
    return msg, fds
