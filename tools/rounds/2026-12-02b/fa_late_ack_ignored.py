"""Bug: the sender drops, as a harmless late duplicate, an Ack whose version is not pending but not newer than the
newest version that receiver already answered (a second Ack of a version, an Ack of a version an earlier Ack
covered), instead of cutting the receiver off. A receiver whose binding acks twice, or acks versions out of order
(a peer in another language that answers each skipped Receive after the newest), stays live and trusted: the
trainer is never told that this worker's answers, on which slot reuse rests (ACK-3, SLOT-2), cannot be believed.
A careful implementer could have written it from VER-4 ("An ack is matched to sends by its version only ... so a
late ack is never taken for a newer one"), read as the TCP rule for duplicate acknowledgements: a late ack is
recognised by its version and ignored. Breaks ACK-5 ("An Ack whose version is not pending for that receiver is a
protocol violation") and SM-S-9 (the sender MUST close the receiver's channel, move it to failed, and fail every
later send to it with ReceiverError).
"""
import weightsync  # noqa: F401
import weightsync.protocol as _protocol
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401

VIOLATES = ("ACK-5", "SM-S-9")

_orig_ack, _orig_handle = _protocol.PeerMachine._ack, _protocol.PeerMachine.handle


def _ack(self, msg, nxt):
    top = getattr(self, "_answered_top", None)
    if msg.version not in self.pending and top is not None and msg.version <= top:
        return _protocol.Settled((), msg.status, msg.detail)  # BUG: a late ack, already answered: ignore it
    settled = _orig_ack(self, msg, nxt)
    self._answered_top = max(msg.version, top if top is not None else -1)
    return settled


def handle(self, msg):
    settled = _orig_handle(self, msg)
    if type(msg) is _protocol.Ready and msg.status == _protocol.OK:
        self._answered_top = msg.version
    return settled


def __init__(self, rid):
    _orig_init(self, rid)
    self._answered_top = None  # a new incarnation answered nothing yet


_orig_init = _protocol.PeerMachine.__init__
_protocol.PeerMachine._ack = _ack
_protocol.PeerMachine.handle = handle
_protocol.PeerMachine.__init__ = __init__
