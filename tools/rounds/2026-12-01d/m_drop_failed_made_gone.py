"""Bug: `sender.drop(i)` cuts off every receiver whose channel is still open, a failed one included: a
receiver that refused its Init (Ready(error)) keeps its channel (SM-S-2 lets the sender close it only when
a new handle or join replaces it), so the implementer, reading API-9's "closes its channel, and from then on
treats it as gone" as what drop is *for*, made "failed --drop--> gone" a step of the table and let drop()
take it. Dropping such a receiver (a cleanup loop that drops every worker that is not healthy) turns its
refusal into a death: the next send names it as ReceiverDiedError with cause "died" and the detail "dropped
by the trainer", and the reason it refused (a target that does not match) is gone from every later error.

Breaks API-9 ("Dropping a receiver that is unconnected, failed or gone changes nothing") and SEND-4 (a send
that targets a failed receiver raises "the error of SEND-7 naming those, with their causes": ReceiverError,
cause "error").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, options  # noqa: F401
from weightsync.clock import Deadline
from weightsync.protocol import SENDER_TABLE, PeerState
from weightsync.sender import Sender

VIOLATES = ("API-9", "SEND-4")

# BUG: a failed receiver whose channel is open can be dropped too: it then reads as gone.
SENDER_TABLE[(PeerState.FAILED, "drop")] = PeerState.GONE


def drop(self, i, timeout=None):
    hub = self._hub
    deadline = Deadline(timeout, hub.clock)
    with hub.locked(deadline):
        peer = hub.peers[options.check_id(i, len(hub.peers))]
        with hub.quiet(deadline):
            # BUG: "cut off" whatever still has an open channel from this side, a refused receiver's included.
            if peer.machine.active or (peer.machine.state is PeerState.FAILED and peer.channel is not None
                                       and not peer.channel.closed):
                hub.drop(peer, "dropped by the trainer: sender.drop() (API-9)")


Sender.drop = drop
