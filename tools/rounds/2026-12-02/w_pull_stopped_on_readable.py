"""Bug: a pull receiver's `stopped` looks at its channel for the sender's end with the read events (POLLIN and
POLLRDHUP) and takes any event as the end, so it turns true as soon as a Receive waits unread in the channel: a
pull worker that runs `while not receiver.stopped:` and polls once per episode leaves its loop the first time the
trainer publishes during an episode, and poll() then applies nothing (it returns None "after Stop"), so the version
is never acked and the trainer's send times out. A careful implementer could have written it: LIFE-7 says reading
`stopped` "looks at the channel without taking a message from it", and on many systems a peer's close shows only as
the socket turning readable (read returns 0 bytes), so they registered the read events, RDHUP included, and took a
reported event for the hang-up. Breaks SM-R-8 ("`receiver.stopped` MUST be true exactly when the receiver is in
state stopped, failed or closed, and false in new and live") and API-3 ("poll(timeout) applies the newest pending
version and returns it").
"""
import select

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, polling, transport  # noqa: F401

VIOLATES = ("SM-R-8", "API-3")


def hung_up(sock):
    """Whether the peer ended the connection, without waiting and without reading what it sent before."""
    poller = select.poll()
    poller.register(sock, polling.IN_EVENTS)  # BUG: RDHUP, and POLLIN: an end of file reads as readable too
    return bool(poller.poll(0))


transport.hung_up = hung_up
