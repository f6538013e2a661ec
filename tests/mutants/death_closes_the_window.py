"""Mutant: a death raises at once: SEND-7's one-second window opens for an Ack(error) or a violation, but a target
found dead closes it, so a failure of another target a fraction of a second later is told in a second error. Violates
SEND-7 (after the first failure the call collects the others' answers for 1 s and names every receiver at fault in
one error). From a fifteenth outside round.

Seam: future.SendFuture._settle.
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, future  # noqa: F401
from weightsync.errors import DIED

VIOLATES = ("SEND-7",)
KILLED_BY = ("conformance/test_failures.py::test_a_death_then_an_error_within_a_second_are_named_together",)

_settle = future.SendFuture._settle


def _settle_death_at_once(self, worker, cause, detail):
    _settle(self, worker, cause, detail)
    if cause == DIED and self._window.closes is not None:
        self._window.closes = min(self._window.closes, self._clock())  # BUG: a death needs no waiting for others


future.SendFuture._settle = _settle_death_at_once
