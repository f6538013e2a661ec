"""Frames read raw, for a test that plays a peer by hand (a receiver that misbehaves): no machine judges them,
as none of the reference's own reads may (each goes through its session's machine, `Channel.wait_event`)."""

from __future__ import annotations

import select

from weightsync import transport
from weightsync.clock import Deadline, millis


def recv(ch: transport.Channel, deadline: Deadline) -> tuple[object, list[int]] | None:
    """The next whole frame with its handles; None once `deadline` passed; ChannelClosed at end of file."""
    while True:
        item = ch.next()
        if item is not None:
            return item
        if ch.eof:
            raise transport.ChannelClosed("end of file")
        poller = select.poll()
        poller.register(ch.fileno(), transport.IN_EVENTS)
        events = poller.poll(millis(deadline.left()))
        if not events and deadline.expired():
            return None
        ch.hup = any(ev & transport.HUP_EVENTS for _, ev in events)  # fill() reads on to an end of file
        ch.fill()
