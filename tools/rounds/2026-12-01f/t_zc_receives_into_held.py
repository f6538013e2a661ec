"""Bug: a zero-copy receiver on TCP receives the next transfer into any of its buffers but the one being applied and
the one pending, so the buffer its weights view (the version it holds and acked) can be the one the data plane
writes next. A zero-copy pull worker that polls between episodes sees its weights change to the new version's bytes
as soon as the transfer lands, without a poll(), inside or outside `reading()`, while `receiver.version` still names
the old one (and half-way through a transfer it reads a mix of the two). The implementer reasoned that over TCP the
buffers are the receiver's own: the sender never writes them, so no slot is "held" as on a Unix slot (ZC-2 is the
sender's rule), and only a buffer an apply is reading or one that waits to be applied needs protecting. Breaks
CONS-3 ("Pull mode applies only inside `poll()`"), CONS-1 ("code of the polling thread between two polls (pull) sees
every array at one version") and ACK-3 (r's weights "keep doing so until r applies another version").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import pending as _pending

VIOLATES = ("CONS-3", "CONS-1", "ACK-3")


def _busy(self):
    with self._cond:
        waiting = self._newest.pending
        # BUG: the held buffer (zero-copy weights) is not in use as far as the data plane is concerned
        return {b for b in (self._applying, waiting.slot if waiting else None) if b is not None}


_pending.NetworkPending._busy = _busy
