"""Bug: a receiver that breaks the protocol is moved to failed and its pending sends fail with ReceiverError (cause
violation), but the sender does not close its channel: it keeps it, unread, until a new handle or join replaces it
or the sender closes. The worker on the other end is never told: its channel stays open, so it does not stop
(`receiver.stopped` stays false, a push worker's thread waits on), and it serves the last version it applied for
as long as the trainer runs, while the trainer has cut it off; a hostile receiver keeps its slot descriptors'
worth of connection open too. The implementer handled both ways of becoming failed in one place and applied
SM-S-2's latitude for a refused handshake ("The sender sends a failed receiver nothing more; it MAY close that
channel at once or when a new handle or join replaces it, or at `close()`") to a receiver failed by a violation.

Breaks SM-S-9 ("is a protocol violation by that receiver: the sender MUST close the receiver's channel and move it
to failed") and, through it, SM-R-3 at the worker ("Stop or end of channel moves a receiver in new or live to
stopped").
"""
import logging

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.hub import Hub

VIOLATES = ("SM-S-9",)
log = logging.getLogger("weightsync")


def _violation(self, peer, error):
    log.error("receiver %d broke the protocol: %s", peer.machine.id, error)
    failed = peer.machine.violation(error)
    # BUG: failed, as after Ready(error): the channel is kept until a new handle, a join or close() (SM-S-2)
    self._retire(peer)
    m = peer.machine
    for v in failed:
        self._settle_one(v, m.id, m.cause, m.failure)


Hub._violation = _violation
