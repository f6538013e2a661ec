"""Bug: a send whose targets include a receiver that is gone (or failed) and one that is not connected
yet raises LocalProtocolError ("not connected; call connect() first") instead of the receiver error
naming the gone one. The caller, told to connect, never learns that a worker died and needs a restart.
SEND-4: when any target is gone or failed, the error of SEND-7 naming those, with their causes and
`.version` None; LocalProtocolError only otherwise. Plausible: the checks follow the state machine's
order, unconnected before gone, and each alone is right.

Seam: weightsync.sender.Sender._check_targets.
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import sender as _sender
from weightsync.errors import LocalProtocolError as _LPE
from weightsync.errors import receivers_error as _receivers_error

VIOLATES = "SEND-4"


def _check_targets(self, targets):
    known, ids = _sender.unsendable(self._peers[i].machine for i in targets)
    if ids:
        raise _LPE(f"receiver(s) {ids} are not connected; call sender.connect() first (SEND-4)")
    if known:
        raise _receivers_error({m.id: m.cause for m in known}, {m.id: m.failure for m in known}, None,
                               _sender.RESTART_HINT)


_sender.Sender._check_targets = _check_targets
