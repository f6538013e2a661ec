"""Mutant: the receiver acks the version before the one it applied (an off-by-one in the answer), so a
Receive is never answered by an Ack of its version or a newer one. Violates ACK-1.

Seam: weightsync.applier.Applier.answer, the one place a receiver writes its answers; only Acks are changed.
"""

import dataclasses

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import applier as _applier
from weightsync.messages import Ack

VIOLATES = "ACK-1"
KILLED_BY = ("conformance/test_versions.py::test_versions_count_up_and_bytes_arrive_exactly",)
_answer = _applier.Applier.answer


def _stale_answer(self, msg, deadline=None):
    if type(msg) is Ack:
        msg = dataclasses.replace(msg, version=msg.version - 1)  # BUG: the version before
    return _answer(self, msg, deadline)


_applier.Applier.answer = _stale_answer
