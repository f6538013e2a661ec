"""Mutant: drop(i) only asks the receiver to stop. It sends Stop and goes on waiting for the
receiver's end of channel, so a receiver that is alive but does not answer (the case drop is for)
keeps its slots pinned and its pending versions unsettled. Violates API-9 ("from then on treats it
as gone ... the slots it pinned are free for the next send") and so SEC-5.

Seam: Sender.drop, the public call itself; its Stop written as raw bytes, past the session (which would
step the machine to stopped).
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, options, wire  # noqa: F401
from weightsync import Sender as _Sender
from weightsync.messages import Stop
from weightsync.protocol import PeerState
from weightsync.transport import Deadline

VIOLATES = ("API-9", "SEC-5")
KILLED_BY = ("conformance/test_failures.py::test_drop_frees_the_slots_a_silent_receiver_pins",)


class Sender(_Sender):
    def drop(self, i, timeout=None):
        hub = self._hub
        with hub.locked(Deadline(timeout)):
            peer = hub.peers[options.check_id(i, len(hub.peers))]
            if peer.machine.state in (PeerState.CONNECTING, PeerState.LIVE) and peer.channel is not None:
                try:  # the bytes only: the machine keeps it live (BUG: nothing else; the sender waits for its end)
                    peer.channel.sock.send(wire.frame(Stop()))
                except OSError:
                    pass
