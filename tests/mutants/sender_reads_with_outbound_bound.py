"""Mutant (written by a colleague who had not read the suite; it survived until the suite was
strengthened): the sender's channels to its receivers are cut into frames with the wrong direction's bound: the
reader of each channel the sender makes for a handle gets wire.MAX_TO_RECEIVER (64 MiB, the bound of what a
*sender* sends) instead of wire.MAX_TO_SENDER (64 KiB). A receiver that announces a frame of, say, 1 MiB is
not refused when its 4 length bytes arrive: the sender waits for (and buffers) the whole payload. Violates
WIRE-2 ("a peer that reads a length above the bound of its direction MUST treat it as a violation as soon as
it has read the 4 length bytes, without reading or allocating the payload") and SEC-1 (a side MUST NOT
allocate for a peer's frame more than the bound of WIRE-2).

Seam: Hub.use (gives a receiver its channel, whose session reads its frames), which raises the session's bound.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, wire  # noqa: F401
from weightsync.hub import Hub

VIOLATES = ("WIRE-2", "SEC-1")
KILLED_BY = ("conformance/test_wire.py::test_a_receiver_that_breaks_the_wire_is_cut_off_alone[length prefix of 64 KiB + 1]",)


_use = Hub.use


def _use_outbound_bound(self, peer, channel, handle, *profile):
    channel.session._reader.max_frame = wire.MAX_TO_RECEIVER  # BUG: the bound of the other direction
    _use(self, peer, channel, handle, *profile)


Hub.use = _use_outbound_bound
