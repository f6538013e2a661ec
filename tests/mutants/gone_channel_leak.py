"""Mutant, written apart from the suite: close() releases only the channels of receivers it still talks to; the
channel of a receiver that is gone (or failed) stays open. Violates LIFE-4 ("releases every
channel and slot it owns")."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Sender as _Sender
from weightsync.protocol import PeerState

VIOLATES = "LIFE-4"


class Sender(_Sender):
    def _release(self):
        for peer in getattr(self, "_peers", []):
            if peer.state in (PeerState.GONE, PeerState.FAILED):
                continue  # "its channel is dead already"
            peer.channel.close()
            peer.handle.conn.close()
        for group in self._groups.values():
            for slot in group.slots:
                slot.close()
            group.slots = []
