"""Bug: `sender.handle(i)` for a receiver that is connecting (its Init sent, no Ready: `connect()` timed out)
returns the handle it gave before instead of a new one over a new channel. The implementer took "connecting"
for "its process may merely be slow": a new channel would cut off a worker about to answer, so it keeps the
one in flight, as it does for an unconnected receiver whose handle no process took. But that handle was
consumed by the connect() that sent the Init: the trainer that restarts a worker whose connect timed out
(the usual recovery, spec 8.4: "restart it with a new handle") gets a closed handle, which cannot be pickled
to the new process nor used by a Receiver, and the receiver cannot be restarted without drop().

Breaks SM-S-5: "A new handle for a failed, gone or connecting receiver resets it to unconnected over a new
channel" (and LIFE-2: connect() consumes a handle).
"""
import weightsync.protocol as _protocol
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.protocol import KEEP, PAIR, REPLACE, PeerState

VIOLATES = ("SM-S-5", "LIFE-2")


def handle_to_give(self, fresh, has_channel):
    """What handle(i) gives (LIFE-2, CON-3)."""
    if self.state is PeerState.UNCONNECTED and fresh:
        return KEEP
    if self.state is PeerState.CONNECTING and has_channel:  # BUG: its process may be slow: keep its handle
        return KEEP
    return PAIR if self.state is PeerState.UNCONNECTED and not has_channel else REPLACE


_protocol.PeerMachine.handle_to_give = handle_to_give
