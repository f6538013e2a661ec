"""Mutant: close() releases the channels but keeps every slot's shared segment. Violates LIFE-4."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "LIFE-4"
_KEPT: list = []


class Sender(_Sender):
    def _release(self):
        for peer in getattr(self, "_peers", []):
            peer.channel.close()
            peer.handle.conn.close()
        for group in getattr(self, "_groups", {}).values():
            _KEPT.extend(group.slots)
            group.slots = []
