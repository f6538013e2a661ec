"""Mutant: the receiver sends Ack(v, ok) before it applies v ("answer first, copy after"), so the sender
may reuse the slot and the trainer believes a version is held that is not. Violates ACK-4, and so
ACK-3 (the ok ack promises bytes the receiver does not hold yet).

Seam: weightsync.applier.Applier._apply_and_ack (apply, then answer), with the two steps swapped.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import applier as _applier
from weightsync.messages import ERROR, OK, Ack

VIOLATES = ("ACK-4", "ACK-3")
KILLED_BY = ("conformance/test_versions.py::test_ack_only_after_apply",)


def _apply_and_ack(self, msg):
    self.answer(Ack(self.id, msg.version, OK, ""))  # BUG: before the apply
    try:
        self.apply(msg.version, msg.slot)
    except Exception as e:  # noqa: BLE001
        self.version = None
        return ERROR, f"{type(e).__name__}: {e}"
    return OK, ""


_applier.Applier._apply_and_ack = _apply_and_ack
