"""Bug: a send checks its targets as "gone" or "not live", and takes a receiver that failed its handshake
(Ready(error)) for one that is merely not connected yet: it raises LocalProtocolError ("call connect()
first") instead of the ReceiverError naming that receiver with its cause and reason."""
from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, __all__, publishing  # noqa: F401
from weightsync.protocol import PeerState

VIOLATES = ("SEND-4", "SEND-7")


def _unsendable(machines):
    bad = [m for m in machines if not m.live]
    if not bad:
        return [], []
    # BUG: only a gone receiver counts as known unusable; a failed one is reported as not connected
    return ([m for m in bad if m.state is PeerState.GONE],
            sorted(m.id for m in bad if m.state is not PeerState.GONE))


publishing.unsendable = _unsendable
