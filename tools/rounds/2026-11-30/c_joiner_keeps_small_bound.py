"""Once welcomed, a receiver that joined by URL lifts RDV-9's pre-proof bound to the bound of the frames it sends
(64 KiB) instead of that of the frames it receives (64 MiB), so a legal Init above 64 KiB (a manifest of a thousand
or so tensors) is refused as too long; WIRE-2 lets a sender's frames reach 64 MiB."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import wire as _wire
from weightsync.join import JoinMachine as _JM

VIOLATES = ("WIRE-2", "RDV-9")


def _after(self):
    if self.listener:
        return _wire.FROM_RECEIVER, _wire.MAX_TO_SENDER
    return _wire.FROM_SENDER, _wire.MAX_TO_SENDER  # BUG: the joiner takes the bound of its own direction


_JM.after = _after
