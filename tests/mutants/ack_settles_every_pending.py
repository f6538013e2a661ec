"""Mutant: an ok Ack settles every version pending at that receiver, whatever version it names (the
predecessor's bare "done", matched by arrival order): a receiver that acks an older version while a newer
one waits is counted as holding the newer one. Violates VER-4 ("an ack is matched to sends by its version
only") and ACK-2 (an Ack of v answers the pending Receives with a version <= v, no others).

Seam: PeerMachine.handle, which after an ok Ack also clears the versions above it.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, protocol  # noqa: F401
from weightsync.messages import Ack

VIOLATES = ("VER-4", "ACK-2")
KILLED_BY = ("conformance/test_versions.py::test_an_ack_of_an_older_pending_version_settles_that_send_alone",)

_handle = protocol.PeerMachine.handle


def _settles_all(self, msg):
    if type(msg) is Ack and msg.status == "ok" and msg.version in self.pending:
        newest = max(self.pending)
        got = _handle(self, msg)
        rest = tuple(self.pending)  # BUG: the newer pending versions are taken as answered too
        self.pending.clear()
        self.acked = newest
        return protocol.Settled(got.versions + rest, got.status, got.detail)
    return _handle(self, msg)


protocol.PeerMachine.handle = _settles_all
