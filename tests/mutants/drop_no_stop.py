"""Mutant: `sender.drop(i)` closes the receiver's channel without sending it Stop first. A Receiver
sees the end of its channel and stops all the same, but a peer reading the channel never gets the Stop
frame. Violates API-9 ("the sender sends it Stop if its channel takes the frame at once, closes its
channel, and from then on treats it as gone").

Seam: Sender.drop, which cuts the receiver off as if it had died, without the Stop.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, options  # noqa: F401
from weightsync import Sender as _Sender
from weightsync.clock import Deadline

VIOLATES = "API-9"
KILLED_BY = ("conformance/test_wire.py::test_drop_sends_stop_then_closes_the_channel",)


class Sender(_Sender):
    def drop(self, i, timeout=None):
        hub = self._hub
        deadline = Deadline(timeout)
        with hub.locked(deadline):
            peer = hub.peers[options.check_id(i, len(hub.peers))]
            with hub.quiet(deadline):
                if not peer.machine.active:
                    return
                hub.gone(peer, "dropped by the trainer: sender.drop() (API-9)")  # BUG: no Stop first
