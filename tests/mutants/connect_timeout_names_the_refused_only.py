"""Mutant: when connect()'s timeout passes inside the second that follows a refusal, the error names the refused
receivers alone: a receiver still silent at the timeout is left out of it, and the error is no SyncTimeoutError, so a
supervisor restarts the refused worker and never learns of the silent one. Violates SEND-7 (the error names every
receiver at fault known when it is raised, `timeout` among the causes) and INIT-5. The reference did this until a
fifteenth outside round found it.

Seam: connecting.receivers_error (connect()'s only use of it is the error of failed receivers).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, connecting  # noqa: F401

VIOLATES = ("SEND-7", "INIT-5")
KILLED_BY = ("conformance/test_failures.py::"
             "test_a_connect_timeout_inside_the_collecting_window_names_the_silent_beside_the_refused",)

_receivers_error = connecting.receivers_error


def receivers_error(causes, details, version, hint=""):
    failed = {i: c for i, c in causes.items() if c != "timeout"}  # BUG: only those that answered are at fault
    return _receivers_error(failed, {i: details[i] for i in failed}, version, hint)


connecting.receivers_error = receivers_error
