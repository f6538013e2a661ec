"""Bug: a receiver that breaks the protocol (an Ack of a version that is not pending, a wrong receiver id, a
malformed frame) is cut off by closing its channel and then handled as a receiver whose channel ended: it becomes
gone, not failed, and its pending and later sends fail with ReceiverDiedError, cause "died", instead of
ReceiverError with cause "violation" and the violation as the reason. A trainer whose `except ReceiverDiedError:`
path relaunches crashed workers relaunches, over and over, a worker whose binding speaks the protocol wrongly, and
the error it logs says "died" where it should say which rule was broken. A careful implementer could have written
it from SM-S-9's "the sender MUST close the receiver's channel": having closed it, the end-of-channel path that
already fails pending sends (SEND-3) looked like the one place to finish the cut, and a receiver with no channel
looks "gone". Breaks SM-S-9 ("move it to failed, and every pending and later send to it MUST fail with
ReceiverError naming it until it is restarted") and SEND-7's cause `violation` for such a receiver.
"""
import weightsync  # noqa: F401
import weightsync.hub as _hub
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("SM-S-9", "SEND-7")


def _violation(self, peer, error):
    """A receiver that broke the protocol is cut off and fails what waits on it (SM-S-9)."""
    _hub.log.error("receiver %d broke the protocol: %s", peer.machine.id, error)
    # BUG: close its channel and let the end-of-channel path finish the cut: it is gone, "died".
    self.gone(peer, f"protocol violation: {error}")


_hub.Hub._violation = _violation
