"""Mutant: the sender counts any pass over its channels as having heard from a network receiver (it stamps
"last heard" when it polls, not when a frame arrives), so a receiver that falls silent, a frozen process
or a host cut off by the network, is never named: a send to it waits for its whole timeout, or forever.
Violates NET-4 ("a side that has received nothing on the channel for the lease ... treats the channel
as ended").

Seam: Hub.serve (handles what the channels have, then cuts off silent network peers), which first
stamps every network receiver as heard.
"""

import time

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.hub import Hub

VIOLATES = "NET-4"
KILLED_BY = ("conformance/test_network.py::test_a_receiver_that_falls_silent_is_named_within_the_lease",)


_serve = Hub.serve


def _serve_hearing_everyone(self, ready):
    now = time.monotonic()
    for peer in self.peers:
        if peer.liveness is not None:
            peer.liveness.hear(now)  # BUG: heard from it whether or not anything came
    _serve(self, ready)


Hub.serve = _serve_hearing_everyone
