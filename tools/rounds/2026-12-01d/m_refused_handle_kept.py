"""Bug: `sender.handle(i)` refuses (LocalProtocolError, "receiver i is connected") a receiver that refused its
Init with Ready(error), for as long as the sender keeps that receiver's channel open (SM-S-2 lets it keep it
until a new handle or join replaces it, and the reference does). The implementer guarded LIFE-3 by what it
protects rather than by the state: a handshake was answered on that channel and the process is still at its
end (its Receiver object is not closed), so a new handle "would cut off a connected process". But a failed
receiver is restarted exactly so: the documented remedy for a refusal (fix the worker's target, then restart
it with `handle(i)`) raises, and since dropping a failed receiver changes nothing, the trainer cannot ever
bring receiver i back.

Breaks LIFE-2 ("once receiver i failed or is gone, `sender.handle(i)` issues a new handle over a new
channel"), SM-S-5 ("A new handle for a failed, gone or connecting receiver resets it to unconnected over a
new channel; a live receiver gets no new handle").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, options  # noqa: F401
from weightsync.clock import Deadline
from weightsync.errors import LocalProtocolError
from weightsync.protocol import KEEP, PAIR, PeerState
from weightsync.sender import Sender

VIOLATES = ("LIFE-2", "SM-S-5")


def handle(self, i):
    hub = self._hub
    with hub.locked(Deadline(None, hub.clock)):
        peer = hub.peers[options.check_id(i, len(hub.peers))]
        hub.take_arrived()
        peer.machine.check_handle()  # LIFE-3
        # BUG: a receiver that answered Ready on a channel still open is taken as connected, a refusal included.
        if peer.machine.state is PeerState.FAILED and peer.channel is not None and not peer.channel.closed:
            raise LocalProtocolError(
                f"receiver {i} is connected; a new handle is issued only once it failed or is gone (LIFE-3)")
        handle_ = peer.handle
        todo = peer.machine.handle_to_give(handle_ is not None and not handle_.given, peer.channel is not None)
        if todo == KEEP:
            return handle_
        if todo == PAIR:
            return hub.pair(peer)
        hub.replace(peer)
        return peer.handle


Sender.handle = handle
