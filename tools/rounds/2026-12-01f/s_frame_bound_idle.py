"""Bug: the frame bound (WIRE-7) is kept as an idle timeout: the clock of a frame in progress starts again whenever
more of its bytes arrive, so only a peer that goes fully silent in mid-frame is cut off after 10 s. A receiver (or
a joiner before its proof) that trickles a frame a byte every second or so is never cut off: the sender waits for
the rest of the frame for ever, every send to that receiver times out instead of failing with ReceiverError
naming it, and the receiver is never named as violator. The implementer read "A side that has waited longer than
that for the rest of a frame" as the time since the frame last made progress, the way socket read timeouts (and
`settimeout` in Python) are measured: a peer that is still sending bytes is not "waited for".

Breaks WIRE-7 ("A peer that has sent the first byte of a frame MUST send its last byte within the reaction bound
(10 s). A side that has waited longer than that for the rest of a frame MUST treat it as a violation, whatever the
timeout of the call that is waiting") and SEC-2 ("a partial frame from one receiver MUST NOT delay its answers
from others, `close()`, or any call's timeout; its frame is bounded by WIRE-7").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.session import Session

VIOLATES = ("WIRE-7", "SEC-2")


def receive_data(self, data, fds, now):
    self._reader.feed(data)
    if fds:
        self._fds.extend(fds)
    self.frame.since = None  # BUG: bytes arrived: the frame made progress, its clock starts again
    self.frame.update(self._reader.partial, now)


Session.receive_data = receive_data
