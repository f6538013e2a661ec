"""Mutant: a send to some receivers also pushes the new version to every other live one. Violates CONS-5."""

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Sender as _Sender
from weightsync.protocol import PeerState

VIOLATES = "CONS-5"


class Sender(_Sender):
    def _publish(self, weights, workers, deadline):
        future = super()._publish(weights, workers, deadline)
        for peer in self._peers:
            if peer.id not in future.workers and peer.state is PeerState.LIVE:
                self._send_receive(peer, peer.group.latest)
        return future
