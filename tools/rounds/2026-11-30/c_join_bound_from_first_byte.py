"""The listener starts a joiner's 10 s to send Join at the joiner's first byte, as WIRE-7 times a frame, instead of
at Hello, so a connection that takes Hello and never writes anything is kept open (and holds a pending-join place)
for as long as it likes; RDV-6 closes a connection with no Join within the reaction bound of Hello."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import limits as _limits
from weightsync import rendezvous as _rdv

VIOLATES = ("RDV-6",)

_orig = _rdv.Listener._advance


def _advance(self, j, readable, now, can_join):
    if not j.channel.session._reader._buf and not readable:  # BUG: no byte from the joiner yet: its clock not started
        j.deadline = max(j.deadline, now + _limits.JOIN_BOUND)
    return _orig(self, j, readable, now, can_join)


_rdv.Listener._advance = _advance
