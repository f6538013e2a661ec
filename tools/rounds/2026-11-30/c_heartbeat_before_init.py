"""The receiver takes a Heartbeat that arrives before Init (after the join, or on a handle's channel) as a message
out of order and cuts the sender off, having read "Heartbeat ... once the join is done" as "once the handshake is
done"; MSG-4 makes Heartbeat legal on every channel in every state, new included."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.messages import Heartbeat as _Heartbeat
from weightsync.receiving import ReceiverMachine as _RM, ReceiverState as _RS

VIOLATES = ("MSG-4",)

_orig = _RM.handle


def _handle(self, msg):
    if type(msg) is _Heartbeat and self.state is _RS.NEW:  # BUG: Heartbeat before Init treated as out of order
        raise self._bad("recv Heartbeat", "Heartbeat before Init", "SM-R-7")
    return _orig(self, msg)


_RM.handle = _handle
