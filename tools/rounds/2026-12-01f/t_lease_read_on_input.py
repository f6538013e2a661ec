"""Bug: the sender looks at a TCP receiver's channel (and so at its lease) only when something happened on it: bytes
arrived, bytes wait to be written, or a frame is half read. A receiver that goes silent (its process frozen by
SIGSTOP or a debugger, its host crashed, the network split) produces none of these, so its lease is never found
expired: a send to it waits out its whole timeout and raises SyncTimeoutError ("did not answer") instead of
ReceiverDiedError ("lease expired") within the lease, and with timeout=None it hangs. While the receiver is alive its
Heartbeats arrive every fraction of the lease, wake the sender, and the sender's own Heartbeats go out, so nothing
looks wrong. The implementer kept the fast path of the Unix profile ("nothing arrived, nothing to write, no timer:
the common case, kept cheap") and counted a frame in progress as the only timer, missing that a lease is a timer
that falls due precisely when nothing arrives. Breaks NET-4 ("A side that has received nothing on the channel for
the lease of Init ... treats the channel as ended: the sender names the receiver gone (ReceiverDiedError, "lease
expired")").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, transport  # noqa: F401
from weightsync import hub as _hub
from weightsync.errors import RemoteProtocolError
from weightsync.messages import Heartbeat
from weightsync.protocol import Settled
from weightsync.session import Ended

VIOLATES = ("NET-4",)


def serve(self, ready):
    import os

    if None in ready:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass
    for peer in self.peers:
        if peer.store_made is not None:
            self._joined(peer)
        if peer.lane_failure is not None:
            (incarnation, why), peer.lane_failure = peer.lane_failure, None
            if peer.machine.incarnation == incarnation and peer.machine.active:
                self.gone(peer, why)
        ch = peer.channel
        if ch is None or ch.closed:
            continue
        hit = ch in ready
        # BUG: a lease is not counted as a timer here: a silent channel is skipped
        if not (hit or ch.wants_write or ch.session.frame.since is not None):
            continue
        try:
            if ch.wants_write:
                ch.flush()
            if not peer.machine.active:
                continue
            if hit:
                ch.fill()
            while peer.machine.active and (event := ch.next_event()) is not None:
                if isinstance(event, Settled):
                    self.settle(peer, event)
                elif isinstance(event, Ended):
                    self.gone(peer, event.why)
                else:
                    self.write(peer, Heartbeat())
        except transport.ChannelClosed as e:
            if peer.machine.active:
                self.gone(peer, f"channel closed: {e}")
        except RemoteProtocolError as e:
            e.peer, e.state = peer.machine.id, e.state or peer.machine.state.value
            self._violation(peer, e)
    if self.listener is not None:
        for rid, channel in self.listener.service(ready, self.can_join):
            self._adopt(self.peers[rid], channel)


_hub.Hub.serve = serve
