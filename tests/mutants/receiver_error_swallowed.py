"""Mutant: an Ack(error) counts as success; the send does not raise ReceiverError. Violates ACK-6, and
SEND-1 (a send returns the version only once every target acked it with ok).

Seam: Hub.settle, which turns an answer into an outcome per pending version: every status is taken as ok.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.hub import Hub
from weightsync.messages import OK

VIOLATES = ("ACK-6", "SEND-1")
KILLED_BY = ("conformance/test_failures.py::test_error_in_apply_names_the_receiver",)


def _settle(self, peer, settled):
    for v in settled.versions:
        self._settle_one(v, peer.machine.id, OK, settled.detail)  # BUG: Ack(error) counts as ok


Hub.settle = _settle
