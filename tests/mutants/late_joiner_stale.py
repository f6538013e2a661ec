"""Mutant: a receiver that connects late gets the version before the latest. Violates LIFE-1."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = "LIFE-1"


class Sender(_Sender):
    def _send_init(self, peer):
        group = peer.group
        older = [s for s in group.slots if s.version is not None and s.version < self._version]
        if not older:
            return super()._send_init(peer)
        stale = max(older, key=lambda s: s.version)
        latest, version = group.latest, self._version
        group.latest, self._version = stale, stale.version
        try:
            return super()._send_init(peer)
        finally:
            group.latest, self._version = latest, version
