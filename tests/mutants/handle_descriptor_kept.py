"""Mutant: `Receiver(handle)` reads a duplicate of the handle's descriptor and leaves the handle's own open, so a
worker process holds two copies of its end of the channel while the handle lives (a `Process` argument lives as long
as the worker). Its `close()` closes only the duplicate: the sender does not see the end, and the next send to that
worker waits its timeout and raises SyncTimeoutError instead of ReceiverDiedError. Violates CON-1 (the end of a
channel is observable when the peer closes its end) and SEND-3. From a thirteenth outside round.

Seam: handshake.open_handle.
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, handshake, transport, wire  # noqa: F401

VIOLATES = ("CON-1", "SEND-3")
KILLED_BY = ("conformance/test_lifecycle.py::test_a_receiver_closed_while_its_process_keeps_the_handle_is_seen_gone",)

_open = handshake.open_handle


def open_handle(handle, clock):
    channel = _open(handle, clock)  # the reference closes the handle's descriptor once it holds a duplicate
    handle.conn = channel.sock.dup()  # BUG: a second descriptor of the same end, left to the handle
    return channel


handshake.open_handle = open_handle
