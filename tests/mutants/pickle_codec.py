"""Mutant: frames carry pickled message objects instead of the wire profile's MessagePack maps ("both ends
are Python anyway"). The implementation talks to itself, but no peer written against Part II can read
its frames or be read by it, and unpickling executes what a peer sends. Violates WIRE-3 (a payload is one
MessagePack map), WIRE-5 (canonical form), WIRE-9 (the test vectors) and MSG-3 ("MUST NOT execute code
carried by a message").

Seam: Session.send and Session.next_message (the codec of wire.frame and wire.decode), on both sides: the
sessions of the sender's channels (Hub.use, after any join) and the receiver's (Receiver._channel) get a
pickling class.
"""

import pickle

from weightsync import *
from weightsync import CAPABILITIES, __all__, session, transport, wire  # noqa: F401
from weightsync import Receiver as _Receiver
from weightsync.hub import Hub
from weightsync.messages import handle_count

VIOLATES = ("WIRE-3", "WIRE-5", "WIRE-9", "MSG-3")
KILLED_BY = ("conformance/test_wire.py::test_every_frame_the_sender_writes_is_canonical",)


class _PickleSession(session.Session):
    def send(self, msg, now):
        if self.liveness is not None:
            self.liveness.speak(now)
        payload = pickle.dumps(msg)  # BUG: not the wire profile
        return wire.LENGTH.pack(len(payload)) + payload

    def next_message(self, now):
        data = self._reader.next()
        self.frame.update(self._reader.partial, now)
        if data is None:
            return None
        msg = pickle.loads(data)  # BUG: runs whatever the peer sent
        n = handle_count(msg) if self._takes_handles else 0
        if self.liveness is not None:
            self.liveness.hear(now)
        return msg, [self._fds.popleft() for _ in range(min(n, len(self._fds)))]


def _pickling(channel):
    if type(channel.session) is session.Session:
        channel.session.__class__ = _PickleSession
    return channel


_use = Hub.use


def _use_pickling(self, peer, channel, handle, liveness=None):
    _use(self, peer, _pickling(channel), handle, liveness)  # after any join, which stays MessagePack


Hub.use = _use_pickling


class Receiver(_Receiver):
    @property
    def _channel(self):
        return self.__dict__.get("_pickled_channel")

    @_channel.setter
    def _channel(self, channel):
        self.__dict__["_pickled_channel"] = None if channel is None else _pickling(channel)
