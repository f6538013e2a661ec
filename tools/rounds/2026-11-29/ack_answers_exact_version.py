"""Bug: the sender matches each Ack to exactly the version it names, so when a receiver coalesces
pending Receives and acks only the newest (as ACK-2 allows), the older sends to it never complete:
`future.wait()` for them times out, and their slots stay pinned. ACK-2: "its Ack of version v answers
every pending Receive with a version <= v". Plausible: VER-4 ("matched to sends by its version only")
read as "an ack settles the one version it names".

Seam: weightsync.protocol.PeerMachine.handle (wrapped: older pending versions are put back).
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import protocol as _protocol
from weightsync.messages import Ack as _Ack

VIOLATES = "ACK-2"

_orig_handle = _protocol.PeerMachine.handle


def _handle(self, msg):
    if type(msg) is _Ack and msg.version in self.pending:
        older = {v: s for v, s in self.pending.items() if v < msg.version}
        settled = _orig_handle(self, msg)
        self.pending.update(older)
        return _protocol.Settled((msg.version,), settled.status, settled.detail)
    return _orig_handle(self, msg)


_protocol.PeerMachine.handle = _handle
