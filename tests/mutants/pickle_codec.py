"""Mutant: frames carry pickled message objects instead of the wire profile's MessagePack maps ("both ends
are Python anyway"). The implementation talks to itself, but no peer written against Part II can read
its frames or be read by it, and unpickling executes what a peer sends. Violates WIRE-3 (a payload is one
MessagePack map), WIRE-5 (canonical form), WIRE-9 (the test vectors) and MSG-3 ("MUST NOT execute code
carried by a message").

Seam: Channel.send and Channel.next (the codec of wire.frame and wire.decode), on both sides: the
sender's channels (Hub._new_peer, Hub._adopt) and the receiver's (Receiver._channel) get a pickling class.
"""

import pickle

from weightsync import *
from weightsync import CAPABILITIES, __all__, transport, wire  # noqa: F401
from weightsync import Receiver as _Receiver
from weightsync import Sender as _Sender
from weightsync.messages import handle_count

VIOLATES = ("WIRE-3", "WIRE-5", "WIRE-9", "MSG-3")
KILLED_BY = ("conformance/test_wire.py::test_every_frame_the_sender_writes_is_canonical",)


class _PickleChannel(transport.Channel):
    def send(self, msg, fds=()):
        if self.closed:
            raise transport.ChannelClosed("channel closed")
        payload = pickle.dumps(msg)  # BUG: not the wire profile
        data = memoryview(wire.LENGTH.pack(len(payload)) + payload)
        self._out.append((data, list(fds)))
        self.out_bytes += len(data)
        self.flush()

    def next(self):
        data = self._reader.next()
        self._mark_partial()
        if data is None:
            return None
        msg = pickle.loads(data)  # BUG: runs whatever the peer sent
        n = handle_count(msg) if self._takes_handles else 0
        return msg, [self._fds_in.popleft() for _ in range(min(n, len(self._fds_in)))]


def _pickling(channel):
    if type(channel) is transport.Channel:
        channel.__class__ = _PickleChannel
    return channel


class Sender(_Sender):
    def _new_peer(self, i, group, pair=None):
        peer = super()._new_peer(i, group, pair)
        _pickling(peer.channel)
        return peer

    def _adopt(self, peer, channel):
        super()._adopt(peer, _pickling(channel))  # after the join, which stays MessagePack


class Receiver(_Receiver):
    @property
    def _channel(self):
        return self.__dict__.get("_pickled_channel")

    @_channel.setter
    def _channel(self, channel):
        self.__dict__["_pickled_channel"] = None if channel is None else _pickling(channel)
