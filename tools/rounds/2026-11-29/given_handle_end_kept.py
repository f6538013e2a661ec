"""Bug: when a handle has been pickled to its worker process, the sender treats that process as the
owner of the receiver's end and does not close its own copy at connect(); a trainer that keeps its
handles in a list (`handles = [sender.handle(i) ...]`) keeps every receiver's end open in its own
process, so a worker that exited before connecting (or dies later) is never seen as end of file:
`sender.connect()` waits out its whole timeout, and a send to a dead worker waits instead of raising
ReceiverDiedError. CON-1: end of channel MUST be observable when the peer exits, which needs every copy
of the end closed; the sender drops its own copy of a receiver's end when it sends Init. Plausible:
"pickling hands the end over" is how it looks from Python, though the parent's descriptor stays open.

Seam: weightsync.publishing.Publisher.send_init (wrapped; Sender._send_init when the round ran).
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import publishing as _publishing

VIOLATES = ("CON-1", "INIT-5")

_orig = _publishing.Publisher.send_init


def _send_init(self, peer):
    handle = peer.handle
    if handle is not None and handle.given:  # went to its process: not ours to close
        peer.handle = None
        try:
            _orig(self, peer)
        finally:
            peer.handle = handle
    else:
        _orig(self, peer)


_publishing.Publisher.send_init = _send_init
