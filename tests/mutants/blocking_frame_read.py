"""Mutant: once a receiver's channel is readable, the sender reads a whole frame with a blocking read ("the
rest of the frame is surely on its way"). A receiver that sends a length prefix and part of a frame and
then stalls holds the sender there, with its lock held: the answers of the others, every other call's
timeout and close() wait on it. Violates SEC-2 ("no read may block the sender on one receiver") and
WIRE-7 (a frame not finished within 10 s is a violation, whatever the call's timeout).

Seam: Channel.fill on the sender's channels (Hub.use hands them out; their class is swapped).
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, transport, wire  # noqa: F401
from weightsync.hub import Hub

VIOLATES = ("SEC-2", "WIRE-7")
KILLED_BY = ("conformance/test_wire.py::test_a_frame_cut_short_holds_up_nobody",)


def _exactly(sock, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


class _WholeFrameChannel(transport.Channel):
    def fill(self):
        if self.closed or self.eof:
            return
        self.sock.setblocking(True)  # BUG: no bound on the wait for the rest of the frame
        size, data = wire.LENGTH.size, b""
        try:
            data = _exactly(self.sock, size)
            n = wire.LENGTH.unpack(data)[0] if len(data) == size else 0
            if 0 < n <= self.session._reader.max_frame:  # a length out of bounds is still refused unread (WIRE-2)
                size += n
                data += _exactly(self.sock, n)
        except OSError:
            pass
        finally:
            if not self.closed:
                self.sock.setblocking(False)
        self.session.receive_data(data, [], self.now())
        if len(data) < size:  # the peer closed before the frame ended
            self.session.receive_eof()


_use = Hub.use


def _use_whole_frames(self, peer, channel, handle, *profile):
    channel.__class__ = _WholeFrameChannel
    _use(self, peer, channel, handle, *profile)


Hub.use = _use_whole_frames
