"""Mutant: a receiver that connects late gets the version before the latest (the slot written before the
latest one, "the latest may still be in use"). Violates LIFE-1, and INIT-1 (Init carries the latest
published version).

Seam: Sender._send_init, run with the group's latest slot and the sender's version moved one back.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Sender as _Sender

VIOLATES = ("LIFE-1", "INIT-1")
KILLED_BY = ("conformance/test_lifecycle.py::test_late_joiner_gets_the_latest_version",)


class Sender(_Sender):
    def _send_init(self, peer):
        group = peer.group
        older = [s for s in group.slots if s.version is not None and s.version < self._version]
        if not older:
            return super()._send_init(peer)
        stale = max(older, key=lambda s: s.version)  # BUG: not the latest
        latest, version = group.latest, self._version
        group.latest, self._version = stale, stale.version
        try:
            return super()._send_init(peer)
        finally:
            group.latest, self._version = latest, version
