"""Mutant (from the outside round of 2026-11-30, where it survived): once a target has failed, a send or wait
whose timeout passes inside SEND-7's one-second window raises the failure alone: the targets still silent at
the timeout go unnamed (an implementer who takes "timeout" as the cause for a call where nothing else went
wrong). Violates SEND-7 (the error names every receiver at fault known when it is raised, a silent one with
cause timeout once the call's timeout passed).

Seam: SendFuture._error, which forgets the timeout whenever some target has failed.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.future import SendFuture
from weightsync.messages import OK

VIOLATES = ("SEND-7",)
KILLED_BY = ("conformance/test_failures.py::test_a_timeout_inside_the_collecting_window_names_the_silent_beside_the_failed",)

_error = SendFuture._error


def _failure_alone(self, timed_out):
    failed = any(c != OK for c, _ in self._outcome.values())
    return _error(self, timed_out and not failed)  # BUG: a known failure hides the silent targets


SendFuture._error = _failure_alone
