"""Mutant, written apart from the suite: the receiver answers Ready(ok) first and then copies the Init's
version out of its slot ("answer the handshake quickly"). The sender then considers the Init's slot
released and may rewrite it while the receiver is still reading it. Violates INIT-4.

Seams: weightsync.applier.Applier.apply (during connect() it only notes the version and slot) and
Applier.answer (the apply noted runs right after Ready went out).
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import applier as _applier
from weightsync.messages import Ready
from weightsync.protocol import ReceiverState

VIOLATES = "INIT-4"
KILLED_BY = ("conformance/test_lifecycle.py::test_ready_comes_after_the_init_version_is_applied",)
_apply, _answer = _applier.Applier.apply, _applier.Applier.answer


def _apply_later(self, version, sid):
    if self._machine.state is ReceiverState.NEW:  # the Init's version, inside connect()
        self._later = (version, sid)  # BUG: applied only after Ready
        return
    _apply(self, version, sid)


def _answer_then_apply(self, msg, deadline=None):
    sent = _answer(self, msg, deadline)
    later, self._later = getattr(self, "_later", None), None
    if later is not None and type(msg) is Ready:
        _apply(self, *later)
    return sent


_applier.Applier.apply = _apply_later
_applier.Applier.answer = _answer_then_apply
