"""Mutant: a pull receiver that stopped on its sender's violation while no poll() waited (over TCP its own thread
reads the channel between calls) returns None from its next poll() instead of raising the RemoteProtocolError,
which stays only in `receiver.failure`. Violates SM-R-7 (the reference's own bug until a twelfth outside round
found it).

Seam: Receiver.poll, which returns None for a stopped receiver before it looks for a violation not yet raised.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import receiver as _receiver

VIOLATES = "SM-R-7"
KILLED_BY = ("conformance/test_network.py::"
             "test_a_pull_receiver_over_tcp_raises_at_its_next_poll_a_violation_it_stopped_on_between_calls",)

_poll = _receiver.Receiver.poll


def _swallowing(self, timeout=0.0):
    self._check_open()
    if self.mode == "pull" and not self._machine.awaiting_init and self.stopped:  # BUG: the violation is not raised
        return None
    return _poll(self, timeout)


_receiver.Receiver.poll = _swallowing
