"""Mutant: frames carry pickled message objects instead of the wire profile's MessagePack maps ("both ends
are Python anyway"). The implementation talks to itself, but no peer written against Part II can read
its frames or be read by it, and unpickling executes what a peer sends. Violates WIRE-3 (a payload is one
MessagePack map), WIRE-5 (canonical form), WIRE-9 (the test vectors) and MSG-3 ("MUST NOT execute code
carried by a message").

Seam: Session.send and Session.next_message (the codec of wire.frame and wire.decode), on both sides: the
sessions of the sender's channels (Hub.use, after any join) and the receiver's (handshake.open_handle for a
handle, rendezvous.dial after a join by URL) get a pickling class.
"""

import pickle

from weightsync import *
from weightsync import CAPABILITIES, __all__, handshake, rendezvous, session, transport, wire  # noqa: F401
from weightsync.hub import Hub
from weightsync.messages import handle_count

VIOLATES = ("WIRE-3", "WIRE-5", "WIRE-9", "MSG-3")
KILLED_BY = ("conformance/test_wire.py::test_every_frame_the_sender_writes_is_canonical",)


class _PickleSession(session.Session):
    def send(self, msg, now, *where):
        super().send(msg, now, *where)  # the machine's step and the lease, as the reference's
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


def _use_pickling(self, peer, channel, handle, *profile):
    _use(self, peer, _pickling(channel), handle, *profile)  # after any join, which stays MessagePack


Hub.use = _use_pickling


_open_handle = handshake.open_handle
_dial = rendezvous.dial


def _open_pickling(handle, clock):
    return _pickling(_open_handle(handle, clock))


def _dial_pickling(*args, **kwargs):
    channel, *rest = _dial(*args, **kwargs)
    return (_pickling(channel), *rest)  # after the join, which stays MessagePack


handshake.open_handle = _open_pickling
rendezvous.dial = _dial_pickling
