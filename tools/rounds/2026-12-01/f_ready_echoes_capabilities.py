"""Bug: a receiver answers Ready(ok) with the capabilities of the sender's Init, echoed whole, instead of the
ones it shares with the sender. The implementer read NET-1's "Init and Ready name the capability network" and
the reference's note that the receiver "echoes the sender's" as "Ready repeats Init's list", which is right for
`network` alone: an Init of a later minor version that names a capability this receiver does not know (WIRE-6:
a minor version adds new capability names, and messages sent only to a peer that announced them) gets it
announced back, so the sender believes the receiver speaks it and may send it messages it cannot read.
WIRE-6: Ready carries the capabilities the receiver shares with the sender, a subset of Init's; a peer ignores
capability names it does not know.
"""
import dataclasses

from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.applier import Applier
from weightsync.messages import OK, Ready

VIOLATES = ("WIRE-6",)

_orig = Applier.answer


def _answer(self, msg, deadline=None):
    if type(msg) is Ready and msg.status == OK and self.init is not None:
        msg = dataclasses.replace(msg, capabilities=tuple(self.init.capabilities))  # "echo the sender's"
    return _orig(self, msg, deadline)


Applier.answer = _answer
