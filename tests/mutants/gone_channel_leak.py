"""Mutant, written apart from the suite: when a receiver is gone, the sender moves its channel aside ("to log
what it still says") instead of closing it, and close() releases only the channels its receivers still
hold, so the channels of gone receivers stay open after close(). Violates LIFE-4 ("releases every
channel and slot it owns").

Seam: Hub.cut_off, which closes the channel of a receiver that is gone or broke the protocol.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.hub import Hub

VIOLATES = "LIFE-4"
KILLED_BY = ("conformance/test_lifecycle.py::test_sender_close_releases_the_channels_of_gone_receivers",)


_cut_off = Hub.cut_off


def _cut_off_leaving_the_channel(self, peer, failed):
    self.__dict__.setdefault("_aside", []).append(peer.channel)  # BUG: never closed
    peer.channel = None
    _cut_off(self, peer, failed)


Hub.cut_off = _cut_off_leaving_the_channel
