"""Mutant: a receiver that connects late gets the version before the latest (the slot written before the
latest one, "the latest may still be in use"). Violates LIFE-1, and INIT-1 (Init carries the latest
published version).

Seam: Publisher.send_init, run with the group's latest slot and the sender's version moved one back.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.publishing import Publisher

VIOLATES = ("LIFE-1", "INIT-1")
KILLED_BY = ("conformance/test_lifecycle.py::test_late_joiner_gets_the_latest_version",)


_send_init = Publisher.send_init


def _send_stale_init(self, peer):
    group = peer.group
    older = [s for s in group.slots if s.version is not None and s.version < self.version]
    if not older:
        return _send_init(self, peer)
    stale = max(older, key=lambda s: s.version)  # BUG: not the latest
    latest, version = group.latest, self.version
    group.latest, self.version = stale, stale.version
    try:
        return _send_init(self, peer)
    finally:
        group.latest, self.version = latest, version


Publisher.send_init = _send_stale_init
