"""Mutant, written apart from the suite: the receiver answers Ready(ok) first and then copies the Init's
version out of its slot ("answer the handshake quickly"). The sender then considers the Init's slot
released and may rewrite it while the receiver is still reading it. Violates INIT-4.

Seams: Receiver._apply (during connect() it only notes the version and slot) and Receiver._answer
(the apply noted runs right after Ready went out).
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import Receiver as _Receiver
from weightsync.messages import Ready
from weightsync.protocol import ReceiverState

VIOLATES = "INIT-4"
KILLED_BY = ("conformance/test_lifecycle.py::test_ready_comes_after_the_init_version_is_applied",)


class Receiver(_Receiver):
    _later = None

    def _apply(self, version, sid):
        if self._machine.state is ReceiverState.NEW:  # the Init's version, inside connect()
            self._later = (version, sid)  # BUG: applied only after Ready
            return
        super()._apply(version, sid)

    def _answer(self, msg, deadline=None):
        sent = super()._answer(msg, deadline)
        later, self._later = self._later, None
        if later is not None and type(msg) is Ready:
            super()._apply(*later)
        return sent
