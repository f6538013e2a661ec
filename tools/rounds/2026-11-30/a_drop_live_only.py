"""Bug: sender.drop(i) cuts a receiver off only when it is live; one that is still connecting (Init sent,
no Ready: its connect() timed out, its process hangs in the handshake) is taken for "not connected" and
left as it is, so it keeps its channel and the Init's slot and is never named gone."""
from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__, options  # noqa: F401
from weightsync.clock import Deadline
from weightsync.sender import Sender

VIOLATES = ("API-9",)


def _drop(self, i, timeout=None):
    hub = self._hub
    deadline = Deadline(timeout, hub.clock)
    with hub.locked(deadline):
        peer = hub.peers[options.check_id(i, len(hub.peers))]
        with hub.quiet(deadline):
            if peer.machine.live:  # BUG: API-9 cuts off a connecting receiver too, not only a live one
                hub.drop(peer, "dropped by the trainer: sender.drop() (API-9)")


Sender.drop = _drop
