"""Mutant: drop(i) only asks the receiver to stop. It sends Stop and goes on waiting for the
receiver's end of channel, so a receiver that is alive but does not answer (the case drop is for)
keeps its slots pinned and its pending versions unsettled. Violates API-9 ("from then on treats it
as gone ... the slots it pinned are free for the next send") and so SEC-5.

Seam: Sender.drop, the public call itself.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, options  # noqa: F401
from weightsync import Sender as _Sender
from weightsync.messages import Stop
from weightsync.protocol import PeerState
from weightsync.transport import ChannelClosed, Deadline

VIOLATES = ("API-9", "SEC-5")
KILLED_BY = ("conformance/test_failures.py::test_drop_frees_the_slots_a_silent_receiver_pins",)


class Sender(_Sender):
    def drop(self, i, timeout=None):
        hub = self._hub
        with hub.locked(Deadline(timeout)):
            peer = hub.peers[options.check_id(i, len(hub.peers))]
            if peer.machine.state in (PeerState.CONNECTING, PeerState.LIVE) and peer.channel is not None:
                try:
                    peer.channel.send(Stop())  # BUG: nothing else; the sender waits for its end of channel
                except ChannelClosed:
                    pass
