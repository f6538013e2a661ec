"""Bug: `Sender(..., lease=, heartbeat=, transfer_timeout=)` checks the network times only on a sender that listens on
`tcp://`; on any other sender (handles only, or `listen="unix:..."`) they are not looked at, so `lease=0.5,
heartbeat=2`, a negative or NaN lease, or a string are accepted silently. A trainer whose config carries a bad pair
(heartbeat not below lease, or seconds typed as milliseconds the wrong way) learns of it only when the job is moved
to TCP workers, and a test of the config on one host passes. A careful implementer could have written it from
API-10's "The reference takes all three ...; they change only a TCP receiver's timing, never a Unix channel's": the
values are dead on a Unix sender, so the implementer checked them where they are used (when the listener is made)
instead of in the constructor. Breaks API-10 ("Each is a finite number > 0, and `heartbeat` is less than `lease`;
anything else raises ValueError from `Sender()`").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, limits  # noqa: F401
from weightsync.sender import Sender as _Sender

VIOLATES = ("API-10",)

_init = _Sender.__init__


def __init__(self, weights, num_workers, *, listen=None, lease=limits.LEASE, heartbeat=limits.HEARTBEAT,
             transfer_timeout=limits.TRANSFER_TIMEOUT, **kwargs):
    if not (isinstance(listen, str) and listen.startswith("tcp://")):
        # BUG: only a TCP receiver's timing uses them: on a Unix sender they are left unchecked (and unused)
        lease, heartbeat, transfer_timeout = limits.LEASE, limits.HEARTBEAT, limits.TRANSFER_TIMEOUT
    _init(self, weights, num_workers, listen=listen, lease=lease, heartbeat=heartbeat,
          transfer_timeout=transfer_timeout, **kwargs)


_Sender.__init__ = __init__
