"""Mutant: a send checks its targets for ones not connected yet before gone or failed ones, so one
unconnected (or connecting) target masks the gone and failed ones: the caller gets LocalProtocolError
("call connect() first") and is never told which receivers to restart. Violates SEND-4 ("when any target
is gone or failed, the error of SEND-7 naming those ...; otherwise, for targets not connected yet,
LocalProtocolError").

Seam: Publisher.check_targets, with its two refusals in the other order.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.errors import LocalProtocolError
from weightsync.publishing import Publisher
from weightsync.sending import unsendable

VIOLATES = "SEND-4"
KILLED_BY = ("conformance/test_failures.py::test_a_refused_send_names_its_gone_and_failed_targets_whatever_else_it_targets",)


_check_targets = Publisher.check_targets


def _check_unconnected_first(self, targets):
    _known, ids = unsendable(self.hub.peers[i].machine for i in targets)
    if ids:  # BUG: before the gone and failed ones
        raise LocalProtocolError(f"receiver(s) {ids} are not connected; call sender.connect() first (SEND-4)")
    _check_targets(self, targets)


Publisher.check_targets = _check_unconnected_first
