"""Mutant: a zero-copy receiver over TCP receives the next transfer into any buffer but the one being applied and
the one pending, so the buffer its weights view can be written while it does not poll: a pull receiver's weights
change without poll(), inside reading(), while its version still names the old one. Violates CONS-3 (pull mode
applies only inside poll()) and ACK-3. From a twelfth outside round.

Seam: NetworkPending._busy.
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import pending as _pending

VIOLATES = ("CONS-3", "ACK-3")
KILLED_BY = ("conformance/test_network.py::test_a_zero_copy_pull_receiver_over_tcp_keeps_its_version_while_the_next_ones_arrive",)


def _busy(self):
    with self._cond:
        waiting = self._newest.pending
        # BUG: the held buffer (zero-copy weights) is not in use as far as the data plane is concerned
        return {b for b in (self._applying, waiting.slot if waiting else None) if b is not None}


_pending.NetworkPending._busy = _busy
