"""Frames read raw, for a test that plays a peer by hand (a receiver that misbehaves): no machine judges them,
as none of the reference's own reads may (each goes through its session's machine, `Channel.wait_event`)."""

from __future__ import annotations

from weightsync import transport
from weightsync.clock import Deadline


def recv(ch: transport.Channel, deadline: Deadline) -> tuple[object, list[int]] | None:
    """The next whole frame with its handles; None once `deadline` passed; ChannelClosed at end of file."""
    while True:
        item = ch.next()
        if item is not None:
            return item
        if ch.eof:
            raise transport.ChannelClosed("end of file")
        if not transport.readable([ch], deadline.left()) and deadline.expired():
            return None
        ch.fill()
