"""Bug: a TCP receiver whose lease expired is reported with the cause "timeout" (SyncTimeoutError, "did not answer"),
not as gone (ReceiverDiedError, "died"). The sender does cut it off (its channel closed, its pending versions
failed) but a trainer's `except ReceiverDiedError:` restart path (re-launch the worker, `sender.connect(workers=[i])`)
never runs for a frozen or unreachable host: the error says "it may still ack later; wait() again or give it a
longer timeout", and every later send to it raises the same SyncTimeoutError at once. The implementer took the
lease for a timeout on the peer's silence ("the peer may still be there, silent", as the session's Ended event
notes) and reported it with the timeout's cause, keeping "died" for an end of file. Breaks NET-4 ("the sender names
the receiver gone (ReceiverDiedError, "lease expired")") and API-4 (`.causes` ... `"died"`).
"""
import logging

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import hub as _hub
from weightsync.errors import TIMEOUT
from weightsync.timers import Liveness

VIOLATES = ("NET-4", "API-4")
log = logging.getLogger("weightsync")


def gone(self, peer, why):
    lease = peer.liveness
    expired = lease is not None and lease.due(self.clock()) == Liveness.EXPIRED
    log.warning("receiver %d is gone: %s", peer.machine.id, why)
    failed = peer.machine.channel_closed(why)
    if expired:  # BUG: a silent peer timed out; only an end of file says it died
        peer.machine.cause = TIMEOUT
    self.cut_off(peer, failed)


_hub.Hub.gone = gone
