"""Mutant (from the outside round of 2026-12-01, where it survived): a receiver answers Ready(ok) with the Init's
capabilities echoed whole, not those it shares with the sender (an implementer who read "the receiver echoes
the sender's `network`" as "Ready repeats Init's list"). An Init of a later minor version naming a capability
this receiver does not know gets it announced back. Violates WIRE-6 (Ready carries the capabilities the receiver
shares with the sender).

Seam: Applier.answer, which replaces an ok Ready's capabilities with the Init's.
"""

import dataclasses

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.applier import Applier
from weightsync.messages import OK, Ready

VIOLATES = ("WIRE-6",)
KILLED_BY = ("conformance/test_receiver_wire.py::test_an_init_of_a_later_minor_version_is_taken",)

_answer = Applier.answer


def _echoes(self, msg, deadline=None):
    if type(msg) is Ready and msg.status == OK and self.init is not None:
        msg = dataclasses.replace(msg, capabilities=tuple(self.init.capabilities))  # BUG: every name, known or not
    return _answer(self, msg, deadline)


Applier.answer = _echoes
