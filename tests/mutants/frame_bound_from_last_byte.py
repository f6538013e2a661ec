"""Mutant (written by a colleague who had not read the suite; it survived until the suite was
strengthened): the sender measures WIRE-7's frame bound from the last bytes of an unfinished frame that arrived,
not from its first byte ("it is still making progress"): every read restarts the clock. A receiver that
sends a length prefix and then trickles one byte every few seconds holds its frame open forever and is
never cut off, although it has not finished its frame within 10 s. Violates WIRE-7 ("a peer that has sent
the first byte of a frame MUST send its last byte within the reaction bound ... a side that has waited
longer than that for the rest of a frame MUST treat it as a violation") and SEC-2 (the partial frame is no
longer bounded by WIRE-7).

Seam: Channel.fill on the sender's channels (Hub.use hands them out; their class is swapped), which
forgets when the frame in progress started before reading more of it.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, transport  # noqa: F401
from weightsync.hub import Hub

VIOLATES = ("WIRE-7", "SEC-2")
KILLED_BY = ("conformance/test_wire.py::test_a_frame_cut_short_holds_up_nobody",)


class _ProgressTimerChannel(transport.Channel):
    def fill(self):
        self.frame.since = None  # BUG: the clock restarts whenever bytes arrive, not at the frame's first byte
        super().fill()


_use = Hub.use


def _use_progress_timer(self, peer, channel, handle, *profile):
    channel.__class__ = _ProgressTimerChannel
    _use(self, peer, channel, handle, *profile)


Hub.use = _use_progress_timer
